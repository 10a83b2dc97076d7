"""A crawl's revisit of a snapshot (bench/RESULTS.md, "A revisit at 10M"): every line kept, a
FRACTION of the priced ones repriced by +3 %, the listings picked by SEED. Two files of two seeds,
applied alternately with `ingest --provider P`, change about as many listings each run.

    python3 bench/revisit.py SNAPSHOT OUT FRACTION [SEED]
"""
import json
import random
import sys


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    src, dst, fraction = sys.argv[1], sys.argv[2], float(sys.argv[3])
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) == 5 else 11)
    changed = 0
    with open(src) as lines, open(dst, "w") as out:
        for line in lines:
            row = json.loads(line)
            if "price" in row and rng.random() < fraction:
                row["price"] = int(row["price"] * 1.03) + 1
                changed += 1
            out.write(json.dumps(row, separators=(",", ":")) + "\n")
    print(f"repriced {changed}", file=sys.stderr)


if __name__ == "__main__":
    main()
