#!/usr/bin/env python3
"""A two-year price history for one model, as dated snapshots of a provider of its own, to replay
with `watch-catalogue ingest --observed-at` (D-214) into a store of any size (issue 51's check
at the scale run's size: bench/history-scale.sh).

    python3 bench/history-dataset.py DATASET OUT [--listings 100000] [--weeks 104] [--step 4]
                                     [--last 2026-11-23] [--model-line N] [--seed 51] [--hour 6]

DATASET is a `catalogue-bench generate` dataset (its models.jsonl and brands.jsonl give the
model's reference and brand name, so the titles match it): the model is the first from line
`--model-line` whose reference is its own. OUT receives:

- providers.jsonl: the provider `history-1`, to `import` into the store first;
- snapshots/NNN.jsonl and dates.txt (`NNN YYYY-MM-DDT06:00:00Z` a line): one snapshot every
  `--step` weeks from `--weeks` weeks before `--last` to it, each the provider's whole stock;
- observations.tsv: what the replay should record (listing, instant, event, price in EUR), for
  the PostgreSQL side (bench/peers/history.py), computed here from the snapshots' rules (a
  first price is `listed`, a changed one `changed`, a listing left out `delisted` at its last
  price, one back `relisted`);
- model.txt: `brand-slug model-slug`.

Each step: 3 % of the stock delisted, as many new listings, 8 % of prices changed by up to 6 %,
and 10 % of the delisted come back. Every price is in EUR, so a series in EUR reads the prices
as they are and PostgreSQL's figures compare exactly.
"""
import argparse
import datetime as dt
import json
import os
import random


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dataset")
    parser.add_argument("out")
    parser.add_argument("--listings", type=int, default=100_000)
    parser.add_argument("--weeks", type=int, default=104)
    parser.add_argument("--step", type=int, default=4)
    parser.add_argument("--last", default="2026-11-23")
    parser.add_argument("--model-line", type=int, default=4242)
    parser.add_argument("--seed", type=int, default=51)
    parser.add_argument("--hour", type=int, default=6, help="UTC hour of each snapshot (0: on the periods' first instants)")
    args = parser.parse_args()
    rng = random.Random(args.seed)

    model = unique_reference_model(os.path.join(args.dataset, "models.jsonl"), args.model_line)
    brands = {b["slug"]: b["name"] for b in read_all(os.path.join(args.dataset, "brands.jsonl"))}
    brand_name = brands[model["brand"]]
    reference = model["referenceNumber"]
    os.makedirs(os.path.join(args.out, "snapshots"), exist_ok=True)
    with open(os.path.join(args.out, "providers.jsonl"), "w") as f:
        f.write(json.dumps({"slug": "history-1", "name": "History One",
                            "url": "https://history-1.example"}) + "\n")
    with open(os.path.join(args.out, "model.txt"), "w") as f:
        f.write(f"{model['brand']} {model['slug']}\n")

    last = dt.datetime.fromisoformat(args.last).replace(hour=args.hour, tzinfo=dt.timezone.utc)
    first = last - dt.timedelta(weeks=args.weeks)
    base = rng.randint(2_000, 20_000)
    active = {}  # code -> price
    delisted = {}  # code -> the price it left at
    next_code = 0
    observations = open(os.path.join(args.out, "observations.tsv"), "w")
    dates = open(os.path.join(args.out, "dates.txt"), "w")

    def new_code():
        nonlocal next_code
        next_code += 1
        return f"H1-{next_code:07d}"

    def observe(code, at, event, price):
        observations.write(f"{code}\t{at.isoformat()}\t{event}\t{price}\n")

    for number, week in enumerate(range(0, args.weeks + 1, args.step)):
        at = first + dt.timedelta(weeks=week)
        if number == 0:
            for _ in range(args.listings):
                code = new_code()
                active[code] = max(100, int(rng.gauss(base, base * 0.15)))
                observe(code, at, "listed", active[code])
        else:
            leaving = rng.sample(sorted(active), len(active) * 3 // 100)
            back = rng.sample(sorted(delisted), len(delisted) // 10)
            for code in leaving:
                delisted[code] = active.pop(code)
                observe(code, at, "delisted", delisted[code])
            for code in back:
                active[code] = delisted.pop(code)
                observe(code, at, "relisted", active[code])
            for code in rng.sample(sorted(active), len(active) * 8 // 100):
                if code in back:
                    continue
                price = max(100, int(active[code] * rng.uniform(0.94, 1.06)))
                if price != active[code]:
                    active[code] = price
                    observe(code, at, "changed", price)
            for _ in range(len(leaving) - len(back)):
                code = new_code()
                active[code] = max(100, int(rng.gauss(base, base * 0.15)))
                observe(code, at, "listed", active[code])
        name = f"{number:03d}"
        dates.write(f"{name} {at.strftime('%Y-%m-%dT%H:%M:%SZ')}\n")
        with open(os.path.join(args.out, "snapshots", f"{name}.jsonl"), "w") as f:
            for code in sorted(active):
                f.write(json.dumps({
                    "sourceId": code,
                    "url": f"https://history-1.example/listings/{code}",
                    "title": f"{brand_name} {model['name']} {reference}",
                    "brand": brand_name,
                    "reference": reference,
                    "price": active[code],
                    "currency": "EUR",
                }) + "\n")
    observations.close()
    dates.close()
    print(f"{model['brand']}/{model['slug']} ({brand_name} {reference}): "
          f"{number + 1} snapshots, {len(active)} active at the end, {next_code} listings in all")


def unique_reference_model(path, first):
    """The first model from line `first` on whose reference no other model has (as its own or
    as an alternate): its listings match it alone, not a choice left to an admin."""
    def norm(reference):
        return "".join(c for c in reference.upper() if c.isalnum())

    models = read_all(path)
    seen = {}
    for model in models:
        for reference in [model["referenceNumber"]] + (model.get("alternateReferences") or []):
            seen[norm(reference)] = seen.get(norm(reference), 0) + 1
    for model in models[first:]:
        if seen[norm(model["referenceNumber"])] == 1:
            return model
    raise SystemExit(f"{path}: no model of a reference of its own from line {first}")


def read_all(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


if __name__ == "__main__":
    main()
