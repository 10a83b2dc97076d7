#!/usr/bin/env python3
"""The peers of the catalogue service, side by side: PostgreSQL and SQLite loaded with the data
`catalogue-bench export-peers` wrote, asked the requests `catalogue-bench load --dump-requests`
wrote, each translated into the SQL that returns what our endpoint returns.

Subcommands (run-peers.sh drives them; see README.md):

  translate REQUESTS [--dialect pg|sqlite]     print each request and its SQL
  pg-load-sql EXPORT_DIR                       psql script: schema, \\copy, indexes, ANALYZE
  pg-bench REQUESTS OUT.json --port P ...      pgbench per kind, figures from the per-transaction logs
  sqlite-load EXPORT_DIR DB                    build the SQLite database (FTS5, btree indexes)
  sqlite-bench DB REQUESTS OUT.json ...        a threaded client per kind, latency client-side
  check REQUESTS --base URL [--port P] [--sqlite DB]
                                               our answers against each peer's, request by request

Python 3.11 standard library only; PostgreSQL is reached through psql and pgbench.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

KINDS = [
    "model_by_slugs",
    "reference_search",
    "text_search_1w",
    "text_search_2w",
    "text_search_3w",
    "models_filtered",
    "listings_filtered",
    "listing_stats",
    "listing_by_id",
]
TEXT_KINDS = {"text_search_1w", "text_search_2w", "text_search_3w"}
# Shortest reference prefix our index searches (index/src/tokenizer.rs MIN_REFERENCE_PREFIX).
MIN_REFERENCE_PREFIX = 3
# pgbench accepts at most 128 scripts (MAX_SCRIPTS in pgbench.c).
MAX_SCRIPTS = 128
DEFAULT_PAGE_SIZE = 24


class Unsupported(Exception):
    """A request this translator has no SQL for."""


# --- what our service does to its input ------------------------------------------------------


def normalize_reference(text: str) -> str:
    """src/domain/reference.rs: case-folded, letters and digits only."""
    return "".join(c for c in text if c.isalnum()).lower()


def words_of(text: str) -> list[str]:
    """The words our text analyzer finds (alphanumeric runs, lowercased), without repeats."""
    out: list[str] = []
    for word in re.findall(r"[^\W_]+", text.lower()):
        if word not in out:
            out.append(word)
    return out


# --- SQL --------------------------------------------------------------------------------------


def lit(value: str) -> str:
    if "\x00" in value:
        raise Unsupported("NUL in a value")
    return "'" + value.replace("'", "''") + "'"


def page_with_total(
    table: str, alias: str, cond: str, order: str, size: int, offset: int, columns: str, joins: str
) -> str:
    """One page of `table` (as `alias`) in `order`, its rows joined for `columns`, and the
    number of rows matching `cond` in every row, as a list endpoint answers."""
    return (
        f"WITH top AS (SELECT {alias}.id FROM {table} WHERE {cond} ORDER BY {order} "
        f"LIMIT {size} OFFSET {offset}) "
        f"SELECT {columns}, (SELECT count(*) FROM {table} WHERE {cond}) AS total "
        f"FROM top JOIN {table} ON {alias}.id = top.id {joins} ORDER BY {order}"
    )


def whole(name: str, value: str) -> int:
    if not re.fullmatch(r"\d{1,18}", value.strip()):
        raise Unsupported(f"{name}={value!r} is not a whole number")
    return int(value.strip())


ITEM = (
    "m.id, m.name, m.reference_number, m.slug, m.thumbnail_url, m.thumbnail_is_cropped, "
    "b.id AS brand_id, b.name AS brand_name, b.slug AS brand_slug, "
    "s.id AS series_id, s.name AS series_name, s.slug AS series_slug, m.listing_count"
)
ITEM_JOINS = "JOIN brands b ON b.id = m.brand_id JOIN series s ON s.id = m.series_id"
LISTING = (
    "l.id, l.model_id, l.price, l.currency, l.price_usd, {converted}, l.condition, "
    "l.availability, l.status, l.title, l.scraped_brand, l.scraped_reference, l.detail, "
    "p.id AS provider_id, p.name AS provider_name, p.slug AS provider_slug"
)


class Sql:
    """The SQL of one request in one dialect: one statement, whose rows are what the endpoint
    shows, first column the id; list statements end with a `total` column."""

    def __init__(self, dialect: str):
        assert dialect in ("pg", "sqlite")
        self.dialect = dialect

    def page(self, params: dict) -> tuple[int, int]:
        size = whole("pageSize", params.get("pageSize", str(DEFAULT_PAGE_SIZE)))
        page = whole("page", params.get("page", "1"))
        if not 1 <= size <= 100 or page < 1:
            raise Unsupported("page or pageSize out of range")
        return size, (page - 1) * size

    def display(self, target: str | None, price: str, currency: str, usd: str) -> str:
        """An asking price shown in `target` (src/rates.rs display_price): its own price when in
        that currency, else its US dollar price converted (half away from zero)."""
        if target is None:
            return "NULL"
        if not re.fullmatch(r"[A-Z]{3}", target):
            raise Unsupported(f"currency {target!r}")
        if target == "USD":
            converted = usd
        elif self.dialect == "pg":
            converted = f"round({usd} * (SELECT usd_to FROM rates WHERE currency = {lit(target)}))::bigint"
        else:
            converted = f"CAST(round({usd} * (SELECT usd_to FROM rates WHERE currency = {lit(target)})) AS INTEGER)"
        return (
            f"CASE WHEN {price} IS NULL OR {currency} IS NULL THEN NULL "
            f"WHEN {currency} = {lit(target)} THEN {price} ELSE {converted} END"
        )

    # GET /v1/models/{brand}/{slug}
    def model_by_slugs(self, brand: str, slug: str) -> str:
        return (
            "SELECT m.id, m.name, m.reference_number, m.slug, m.description, m.detail, "
            "b.id AS brand_id, b.name AS brand_name, b.slug AS brand_slug, "
            "s.id AS series_id, s.name AS series_name, s.slug AS series_slug, c.detail AS caliber "
            "FROM brands b JOIN models m ON m.brand_id = b.id "
            "JOIN series s ON s.id = m.series_id LEFT JOIN calibers c ON c.id = m.caliber_id "
            f"WHERE b.slug = {lit(brand)} AND m.slug = {lit(slug)}"
        )

    def ranked_items(self, hits: str, descending: bool, size: int, offset: int) -> str:
        """Model list items of a materialised `hits(id, score)`: its first page by score (ties by
        id), and the total."""
        direction = "DESC" if descending else "ASC"
        return (
            f"WITH hits AS MATERIALIZED ({hits}), "
            f"top AS (SELECT id, score FROM hits ORDER BY score {direction}, id LIMIT {size} OFFSET {offset}) "
            f"SELECT {ITEM}, (SELECT count(*) FROM hits) AS total "
            f"FROM top JOIN models m ON m.id = top.id {ITEM_JOINS} "
            f"ORDER BY top.score {direction}, top.id"
        )

    # GET /v1/models?q=<a reference>: the whole text, normalised, as a primary or alternate
    # reference (exact first) or a reference prefix, ties by id.
    def reference_search(self, q: str, size: int, offset: int) -> str:
        n = normalize_reference(q)
        if not n:
            raise Unsupported(f"q={q!r} normalises to nothing")
        if len(n) >= MIN_REFERENCE_PREFIX:
            # Prefix lookups on the btree: LIKE under the C collation (PostgreSQL), GLOB (SQLite).
            where = f"ref_norm LIKE {lit(n + '%')}" if self.dialect == "pg" else f"ref_norm GLOB {lit(n + '*')}"
        else:
            where = f"ref_norm = {lit(n)}"
        hits = (
            f"SELECT model_id AS id, max(CASE WHEN ref_norm = {lit(n)} THEN 2 ELSE 1 END) AS score "
            f"FROM model_refs WHERE {where} GROUP BY model_id"
        )
        return self.ranked_items(hits, True, size, offset)

    # GET /v1/models?q=<words>: every word, best match first, ties by id.
    def text_search(self, q: str, size: int, offset: int) -> str:
        words = words_of(q)
        if not words:
            raise Unsupported(f"q={q!r} has no word")
        if self.dialect == "pg":
            hits = (
                "SELECT m.id, ts_rank(m.tsv, q.query) AS score "
                f"FROM models m, plainto_tsquery('simple', {lit(' '.join(words))}) AS q(query) "
                "WHERE m.tsv @@ q.query"
            )
            return self.ranked_items(hits, True, size, offset)
        match = " ".join('"' + w.replace('"', '""') + '"' for w in words)
        hits = f"SELECT rowid AS id, rank AS score FROM models_fts WHERE models_fts MATCH {lit(match)}"
        return self.ranked_items(hits, False, size, offset)

    # GET /v1/models?brand=…&sort=… (no q)
    def models_list(self, params: dict, size: int, offset: int) -> str:
        allowed = {"brand", "brandSlug", "sort", "page", "pageSize"}
        if set(params) - allowed:
            raise Unsupported(f"models filters {sorted(set(params) - allowed)}")
        where = []
        brand = params.get("brand", params.get("brandSlug"))
        if brand is not None:
            where.append(f"m.brand_id = (SELECT id FROM brands WHERE slug = {lit(brand)})")
        sort = params.get("sort", "name_asc")
        orders = {
            "newest": "m.release_year DESC NULLS LAST, m.id DESC"
            if self.dialect == "pg"
            else "m.release_year DESC, m.id DESC",  # SQLite: NULLs sort last descending
            "name_asc": "lower(m.name), m.id",
            "name_desc": "lower(m.name) DESC, m.id",
            "reference_asc": "m.ref_norm, m.id",
        }
        if sort not in orders:
            raise Unsupported(f"models sort {sort!r}")
        order = orders[sort]
        cond = " AND ".join(where) or "TRUE"
        return page_with_total("models m", "m", cond, order, size, offset, ITEM, ITEM_JOINS)

    def model_id_of(self, brand: str, slug: str) -> str:
        return (
            "(SELECT m.id FROM models m JOIN brands b ON b.id = m.brand_id "
            f"WHERE b.slug = {lit(brand)} AND m.slug = {lit(slug)})"
        )

    # GET /v1/listings?…
    def listings_list(self, params: dict, size: int, offset: int) -> str:
        where = []
        if "q" in params:
            raise Unsupported("listings q")
        if "model" in params:
            if "brand" not in params:
                raise Unsupported("model without brand (400)")
            where.append(f"l.model_id = {self.model_id_of(params['brand'], params['model'])}")
        if "modelId" in params:
            where.append(f"l.model_id = {whole('modelId', params['modelId'])}")
        if "brand" in params:
            where.append(f"l.brand_id = (SELECT id FROM brands WHERE slug = {lit(params['brand'])})")
        if "provider" in params:
            where.append(f"l.provider_id = (SELECT id FROM providers WHERE slug = {lit(params['provider'])})")
        for name in ("condition", "availability"):
            if name in params:
                where.append(f"l.{name} = {lit(params[name])}")
        include_delisted = params.get("includeDelisted") == "true"
        if "status" in params:
            if params["status"] == "DELISTED" and not include_delisted:
                raise Unsupported("status=DELISTED without includeDelisted (400)")
            where.append(f"l.status = {lit(params['status'])}")
        elif not include_delisted:
            where.append("l.status <> 'DELISTED'")
        if "minPriceUSD" in params:
            where.append(f"l.price_usd >= {whole('minPriceUSD', params['minPriceUSD'])}")
        if "maxPriceUSD" in params:
            where.append(f"l.price_usd <= {whole('maxPriceUSD', params['maxPriceUSD'])}")
        if params.get("unmatched") == "true":
            where.append("l.model_id IS NULL")
        sort = params.get("sort", "newest")
        orders = {
            "newest": "l.id DESC",
            "oldest": "l.id",
            # Unpriced last in either direction, ties by id (index/src/collector.rs).
            "price_asc": "l.price_usd ASC NULLS LAST, l.id",
            "price_desc": "l.price_usd DESC NULLS LAST, l.id",
        }
        if sort not in orders:
            raise Unsupported(f"listings sort {sort!r}")
        order = orders[sort]
        cond = " AND ".join(where) or "TRUE"
        converted = self.display(params.get("currency"), "l.price", "l.currency", "l.price_usd")
        columns = LISTING.format(converted=converted)
        return page_with_total(
            "listings l", "l", cond, order, size, offset, columns, "JOIN providers p ON p.id = l.provider_id"
        )

    # GET /v1/listings/stats?brand=…&model=…[&currency=…]: the model's ACTIVE listings.
    def listing_stats(self, params: dict) -> str:
        if "brand" not in params or "model" not in params:
            raise Unsupported("stats without brand and model (400)")
        currency = params.get("currency", "USD").upper()
        value = self.display(currency, "l.price", "l.currency", "l.price_usd")
        active = (
            f"SELECT l.price, {value} AS v FROM listings l "
            f"WHERE l.model_id = {self.model_id_of(params['brand'], params['model'])} "
            "AND l.status = 'ACTIVE'"
        )
        if self.dialect == "pg":
            # The mean of the middle two of an even count, rounded half up (numeric round).
            return (
                f"WITH a AS ({active}) SELECT count(*) AS count, count(price) AS priced_count, "
                "min(v) AS low, "
                "round(percentile_cont(0.5) WITHIN GROUP (ORDER BY v)::numeric)::bigint AS median, "
                "max(v) AS high FROM a"
            )
        return (
            f"WITH a AS MATERIALIZED ({active}), "
            "agg AS (SELECT count(*) AS n, count(price) AS priced, count(v) AS nv, "
            "min(v) AS low, max(v) AS high FROM a), "
            "mid AS (SELECT v FROM a WHERE v IS NOT NULL ORDER BY v "
            "LIMIT 2 - (SELECT nv FROM agg) % 2 OFFSET ((SELECT nv FROM agg) - 1) / 2) "
            "SELECT n AS count, priced AS priced_count, low, "
            "(SELECT CASE count(*) WHEN 1 THEN sum(v) WHEN 2 THEN (sum(v) + 1) / 2 END FROM mid) "
            "AS median, high FROM agg"
        )

    # GET /v1/listings/{id}: the listing and its model as a list item.
    def listing_by_id(self, listing_id: int, params: dict) -> str:
        converted = self.display(params.get("currency"), "l.price", "l.currency", "l.price_usd")
        return (
            f"SELECT {LISTING.format(converted=converted)}, {ITEM} "
            "FROM listings l JOIN providers p ON p.id = l.provider_id "
            "LEFT JOIN models m ON m.id = l.model_id LEFT JOIN brands b ON b.id = m.brand_id "
            f"LEFT JOIN series s ON s.id = m.series_id WHERE l.id = {listing_id}"
        )

    def translate(self, kind: str, url: str) -> str:
        parts = urllib.parse.urlsplit(url)
        path = urllib.parse.unquote(parts.path)
        if path.startswith("/v1/"):
            path = path[3:]
        params = {}
        for name, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True):
            if name in params:
                raise Unsupported(f"{name} given twice")
            params[name] = value
        segments = [s for s in path.split("/") if s]
        if segments[:1] == ["models"] and len(segments) == 3:
            return self.model_by_slugs(segments[1], segments[2])
        if segments == ["models"]:
            size, offset = self.page(params)
            if "q" in params:
                rest = set(params) - {"q", "page", "pageSize", "sort"}
                if rest or params.get("sort", "relevance") != "relevance":
                    raise Unsupported(f"q with {sorted(rest)} or a sort")
                if kind == "reference_search":
                    return self.reference_search(params["q"], size, offset)
                return self.text_search(params["q"], size, offset)
            return self.models_list(params, size, offset)
        if segments == ["listings", "stats"]:
            return self.listing_stats(params)
        if segments == ["listings"]:
            size, offset = self.page(params)
            return self.listings_list(params, size, offset)
        if segments[:1] == ["listings"] and len(segments) == 2:
            return self.listing_by_id(whole("id", segments[1]), params)
        raise Unsupported(f"no translation for {path}")


# --- requests ---------------------------------------------------------------------------------


def read_requests(path: str) -> dict[str, list[str]]:
    """The pools of REQUESTS (JSON lines {"kind", "url"}), by kind, in file order."""
    pools: dict[str, list[str]] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                pools.setdefault(r["kind"], []).append(r["url"])
    return pools


def spread(pool: list, count: int) -> list:
    """At most `count` items of `pool`, evenly spread, in order (deterministic)."""
    if len(pool) <= count:
        return list(pool)
    return [pool[(i * len(pool)) // count] for i in range(count)]


def translated(pools: dict[str, list[str]], dialect: str, kinds: list[str] | None, cap: int):
    """{kind: [(url, sql)]}, each kind's pool spread to `cap` requests; untranslatable ones are
    reported and left out."""
    sql = Sql(dialect)
    out: dict[str, list[tuple[str, str]]] = {}
    for kind in KINDS:
        if kind not in pools or (kinds and kind not in kinds):
            continue
        items = []
        for url in spread(pools[kind], cap):
            try:
                items.append((url, sql.translate(kind, url)))
            except Unsupported as e:
                print(f"warning: {kind} {url}: left out: {e}", file=sys.stderr)
        if items:
            out[kind] = items
    return out


# --- figures ----------------------------------------------------------------------------------


def percentile(sorted_values: list[int], p: float) -> int:
    """Nearest rank, as bench/src/load.rs."""
    if not sorted_values:
        return 0
    import math

    rank = min(max(math.ceil(p * len(sorted_values)), 1), len(sorted_values))
    return sorted_values[rank - 1]


def summarize(kind: str, pool: int, sampled: int, latencies_us: list[int], errors: int, secs: float) -> dict:
    latencies_us.sort()
    ok = len(latencies_us)
    return {
        "kind": kind,
        "pool": pool,
        "sampled": sampled,
        "count": ok + errors,
        "errors": errors,
        "rps": round((ok + errors) / max(secs, 1e-9), 1),
        "ok_rps": round(ok / max(secs, 1e-9), 1),
        "p50_us": percentile(latencies_us, 0.50),
        "p90_us": percentile(latencies_us, 0.90),
        "p99_us": percentile(latencies_us, 0.99),
        "max_us": latencies_us[-1] if latencies_us else 0,
        "mean_us": sum(latencies_us) // ok if ok else 0,
    }


def print_table(report: dict) -> None:
    print(f"\n{report['engine']}: concurrency {report['concurrency']}, {report['duration_secs']} s per kind")
    print("| kind | requests | errors | req/s | p50 ms | p90 ms | p99 ms | max ms |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    for k in report["kinds"]:
        print(
            f"| {k['kind']} | {k['count']} | {k['errors']} | {k['rps']:.1f} | {k['p50_us'] / 1000:.2f} "
            f"| {k['p90_us'] / 1000:.2f} | {k['p99_us'] / 1000:.2f} | {k['max_us'] / 1000:.2f} |"
        )


# --- PostgreSQL -------------------------------------------------------------------------------

PG_TABLES = {
    "brands": "id bigint NOT NULL, slug text NOT NULL, name text NOT NULL, aliases text NOT NULL",
    "series": "id bigint NOT NULL, brand_id bigint NOT NULL, slug text NOT NULL, name text NOT NULL",
    "providers": "id bigint NOT NULL, slug text NOT NULL, name text NOT NULL",
    "calibers": "id bigint NOT NULL, brand_id bigint NOT NULL, slug text NOT NULL, reference text NOT NULL, detail jsonb NOT NULL",
    "rates": "currency text NOT NULL, usd_to numeric NOT NULL",
    "models": (
        "id bigint NOT NULL, brand_id bigint NOT NULL, series_id bigint NOT NULL, caliber_id bigint, "
        "slug text NOT NULL, name text NOT NULL, reference_number text NOT NULL, ref_norm text NOT NULL, "
        "alt_refs_norm text NOT NULL, release_year integer, brand_names text, series_name text, "
        "description text, listing_count bigint NOT NULL, thumbnail_url text, "
        "thumbnail_is_cropped boolean NOT NULL, detail jsonb NOT NULL, "
        # Full text: model name and references, brand names and aliases, series, description
        # (the fields our q searches, weighted in that order).
        "tsv tsvector GENERATED ALWAYS AS ("
        "setweight(to_tsvector('simple', name || ' ' || ref_norm || ' ' || alt_refs_norm), 'A') || "
        "setweight(to_tsvector('simple', coalesce(brand_names, '') || ' ' || coalesce(series_name, '')), 'B') || "
        "setweight(to_tsvector('simple', coalesce(description, '')), 'D')) STORED"
    ),
    "listings": (
        "id bigint NOT NULL, provider_id bigint NOT NULL, model_id bigint, brand_id bigint, "
        "status text NOT NULL, condition text, availability text, price bigint, currency text, "
        "price_usd bigint, title text, scraped_brand text, scraped_reference text, ref_norm text, "
        "created_at timestamptz NOT NULL, detail jsonb NOT NULL"
    ),
}

PG_INDEXES = """
ALTER TABLE brands ADD PRIMARY KEY (id);
CREATE UNIQUE INDEX brands_slug ON brands (slug);
ALTER TABLE series ADD PRIMARY KEY (id);
CREATE UNIQUE INDEX series_brand_slug ON series (brand_id, slug);
ALTER TABLE providers ADD PRIMARY KEY (id);
CREATE UNIQUE INDEX providers_slug ON providers (slug);
ALTER TABLE calibers ADD PRIMARY KEY (id);
ALTER TABLE rates ADD PRIMARY KEY (currency);
ALTER TABLE models ADD PRIMARY KEY (id);
CREATE UNIQUE INDEX models_brand_slug ON models (brand_id, slug);
CREATE INDEX models_brand_newest ON models (brand_id, release_year DESC NULLS LAST, id DESC);
CREATE INDEX models_series ON models (series_id);
CREATE INDEX models_caliber ON models (caliber_id);
CREATE INDEX models_ref_norm ON models (ref_norm);
CREATE TABLE model_refs AS
  SELECT id AS model_id, ref_norm, true AS is_primary FROM models
  UNION
  SELECT id, unnest(string_to_array(alt_refs_norm, ' ')), false FROM models WHERE alt_refs_norm <> '';
CREATE INDEX model_refs_ref ON model_refs (ref_norm, model_id);
CREATE INDEX models_name_trgm ON models USING gin (name gin_trgm_ops);
CREATE INDEX models_tsv ON models USING gin (tsv);
ALTER TABLE listings ADD PRIMARY KEY (id);
CREATE INDEX listings_brand_status_price ON listings (brand_id, status, price_usd);
CREATE INDEX listings_brand_price ON listings (brand_id, price_usd, id);
CREATE INDEX listings_model_status ON listings (model_id, status);
CREATE INDEX listings_condition_price ON listings (condition, price_usd);
CREATE INDEX listings_provider ON listings (provider_id, id);
CREATE INDEX listings_ref_norm ON listings (ref_norm);
VACUUM ANALYZE;
"""

TABLE_ORDER = ["brands", "series", "providers", "calibers", "rates", "models", "listings"]


def manifest(export_dir: str) -> dict:
    with open(os.path.join(export_dir, "manifest.json"), encoding="utf-8") as f:
        m = json.load(f)
    return {t["name"]: t for t in m["tables"]}


def cmd_pg_load_sql(args) -> None:
    tables = manifest(args.export_dir)
    out = ["\\set ON_ERROR_STOP on", "SET maintenance_work_mem = '1GB';", "CREATE EXTENSION IF NOT EXISTS pg_trgm;"]
    for name in TABLE_ORDER:
        out.append(f"CREATE TABLE {name} ({PG_TABLES[name]});")
    for name in TABLE_ORDER:
        t = tables[name]
        path = os.path.abspath(os.path.join(args.export_dir, t["file"]))
        if "'" in path:
            raise SystemExit(f"{path}: a quote in the path")
        source = f"PROGRAM 'gzip -dc {path}'" if path.endswith(".gz") else f"'{path}'"
        out.append(f"\\echo loading {name} ({t['rows']} rows)")
        out.append(f"\\copy {name} ({', '.join(t['columns'])}) FROM {source}")
    out.append("\\echo indexes and ANALYZE")
    out.append(PG_INDEXES)
    print("\n".join(out))


def parse_pgbench_logs(prefix: str) -> tuple[list[int], int, int]:
    """Latencies (µs) of the logged transactions, failed ones, and how many scripts ran.
    Lines: client_id transaction_no time script_no time_epoch time_us [...]."""
    latencies, failed = [], 0
    scripts = set()
    directory, base = os.path.split(prefix)
    for name in os.listdir(directory or "."):
        if not name.startswith(base + "."):
            continue
        with open(os.path.join(directory, name), encoding="utf-8") as f:
            for line in f:
                fields = line.split()
                if len(fields) < 6:
                    continue
                scripts.add(fields[3])
                if fields[2].isdigit():
                    latencies.append(int(fields[2]))
                else:
                    failed += 1
    return latencies, failed, len(scripts)


def pg_version(args) -> str:
    out = subprocess.run(
        ["psql", "-h", args.host, "-p", str(args.port), "-U", args.user, "-d", args.db, "-Atc", "SHOW server_version"],
        capture_output=True, text=True, check=True,
    )
    return out.stdout.strip()


def cmd_pg_bench(args) -> None:
    pools = read_requests(args.requests)
    per_kind = translated(pools, "pg", args.kinds, MAX_SCRIPTS)
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PGHOST=args.host, PGPORT=str(args.port), PGUSER=args.user, PGDATABASE=args.db)
    kinds = []
    for kind, items in per_kind.items():
        scripts = work / "scripts" / kind
        scripts.mkdir(parents=True, exist_ok=True)
        files = []
        index = []
        for i, (url, sql) in enumerate(items):
            f = scripts / f"{i:03}.sql"
            # No comment: pgbench would read a `:name` in it as a variable.
            f.write_text(f"{sql};\n", encoding="utf-8")
            files.append(str(f))
            index.append(f"{f.name}\t{url}\n")
        (scripts / "index.tsv").write_text("".join(index), encoding="utf-8")
        threads = max(1, min(args.threads, args.concurrency))
        base = ["pgbench", "-n", "-M", args.mode, "-c", str(args.concurrency), "-j", str(threads)]
        for f in files:
            base += ["-f", f]
        if args.warmup > 0:
            subprocess.run(base + ["-T", str(args.warmup)], env=env, check=True, capture_output=True, text=True)
        logs = work / "logs"
        logs.mkdir(exist_ok=True)
        for old in logs.glob(f"{kind}.*"):
            old.unlink()
        prefix = str(logs / kind)
        run = subprocess.run(
            base + ["-T", str(args.duration), "--log", f"--log-prefix={prefix}"],
            env=env, capture_output=True, text=True,
        )
        (work / f"pgbench-{kind}.out").write_text(run.stdout + run.stderr, encoding="utf-8")
        latencies, failed, _ = parse_pgbench_logs(prefix)
        aborted = 0 if run.returncode == 0 else 1
        if run.returncode != 0:
            print(f"warning: pgbench {kind} exited {run.returncode}: {run.stderr.strip()[-500:]}", file=sys.stderr)
        summary = summarize(kind, len(pools[kind]), len(items), latencies, failed + aborted, args.duration)
        m = re.search(r"tps = ([\d.]+) \(without initial connection time\)", run.stdout)
        summary["pgbench_tps"] = float(m.group(1)) if m else None
        kinds.append(summary)
        print(f"postgresql {kind}: {summary['count']} requests, p50 {summary['p50_us'] / 1000:.2f} ms", file=sys.stderr)
    report = {
        "engine": f"postgresql {pg_version(args)}",
        "client": f"pgbench -M {args.mode} -j {max(1, min(args.threads, args.concurrency))}, over TCP on loopback",
        "concurrency": args.concurrency,
        "duration_secs": args.duration,
        "warmup_secs": args.warmup,
        "kinds": kinds,
    }
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print_table(report)


# --- SQLite -----------------------------------------------------------------------------------

SQLITE_SCHEMA = """
CREATE TABLE brands (id INTEGER PRIMARY KEY, slug TEXT NOT NULL, name TEXT NOT NULL, aliases TEXT NOT NULL);
CREATE TABLE series (id INTEGER PRIMARY KEY, brand_id INTEGER NOT NULL, slug TEXT NOT NULL, name TEXT NOT NULL);
CREATE TABLE providers (id INTEGER PRIMARY KEY, slug TEXT NOT NULL, name TEXT NOT NULL);
CREATE TABLE calibers (id INTEGER PRIMARY KEY, brand_id INTEGER NOT NULL, slug TEXT NOT NULL, reference TEXT NOT NULL, detail TEXT NOT NULL);
CREATE TABLE rates (currency TEXT PRIMARY KEY, usd_to REAL NOT NULL);
CREATE TABLE models (id INTEGER PRIMARY KEY, brand_id INTEGER NOT NULL, series_id INTEGER NOT NULL,
  caliber_id INTEGER, slug TEXT NOT NULL, name TEXT NOT NULL, reference_number TEXT NOT NULL,
  ref_norm TEXT NOT NULL, alt_refs_norm TEXT NOT NULL, release_year INTEGER, brand_names TEXT,
  series_name TEXT, description TEXT, listing_count INTEGER NOT NULL, thumbnail_url TEXT,
  thumbnail_is_cropped INTEGER NOT NULL, detail TEXT NOT NULL);
CREATE TABLE listings (id INTEGER PRIMARY KEY, provider_id INTEGER NOT NULL, model_id INTEGER,
  brand_id INTEGER, status TEXT NOT NULL, condition TEXT, availability TEXT, price INTEGER,
  currency TEXT, price_usd INTEGER, title TEXT, scraped_brand TEXT, scraped_reference TEXT,
  ref_norm TEXT, created_at TEXT NOT NULL, detail TEXT NOT NULL);
-- The primary and alternate references of every model, one row each (filled from models).
CREATE TABLE model_refs (model_id INTEGER NOT NULL, ref_norm TEXT NOT NULL, is_primary INTEGER NOT NULL);
"""

SQLITE_INDEXES = """
CREATE UNIQUE INDEX brands_slug ON brands (slug);
CREATE UNIQUE INDEX series_brand_slug ON series (brand_id, slug);
CREATE UNIQUE INDEX providers_slug ON providers (slug);
CREATE UNIQUE INDEX models_brand_slug ON models (brand_id, slug);
CREATE INDEX models_brand_newest ON models (brand_id, release_year DESC, id DESC);
CREATE INDEX models_series ON models (series_id);
CREATE INDEX models_caliber ON models (caliber_id);
CREATE INDEX models_ref_norm ON models (ref_norm);
CREATE INDEX model_refs_ref ON model_refs (ref_norm, model_id);
CREATE VIRTUAL TABLE models_fts USING fts5(
  name, refs, brand_names, series_name, description,
  content='', tokenize='unicode61 remove_diacritics 2');
INSERT INTO models_fts (models_fts, rank) VALUES ('rank', 'bm25(3.0, 2.0, 1.5, 1.5, 0.5)');
INSERT INTO models_fts (rowid, name, refs, brand_names, series_name, description)
  SELECT id, name, ref_norm || ' ' || alt_refs_norm, coalesce(brand_names, ''),
         coalesce(series_name, ''), coalesce(description, '') FROM models;
INSERT INTO models_fts (models_fts) VALUES ('optimize');
CREATE INDEX listings_brand_status_price ON listings (brand_id, status, price_usd);
CREATE INDEX listings_brand_price ON listings (brand_id, price_usd, id);
CREATE INDEX listings_model_status ON listings (model_id, status);
CREATE INDEX listings_condition_price ON listings (condition, price_usd);
CREATE INDEX listings_provider ON listings (provider_id, id);
CREATE INDEX listings_ref_norm ON listings (ref_norm);
ANALYZE;
"""

ESCAPES = {"\\\\": "\\", "\\t": "\t", "\\n": "\n", "\\r": "\r"}


def copy_rows(path: str, booleans: set[int]):
    """Rows of a COPY text file (plain or gzipped): tuples of str or None."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", newline="\n") as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            row = []
            for i, value in enumerate(fields):
                if value == "\\N":
                    row.append(None)
                    continue
                if "\\" in value:
                    value = re.sub(r"\\[\\tnr]", lambda m: ESCAPES[m.group(0)], value)
                if i in booleans:
                    value = 1 if value == "t" else 0
                row.append(value)
            yield row


def cmd_sqlite_load(args) -> None:
    tables = manifest(args.export_dir)
    if os.path.exists(args.db):
        os.unlink(args.db)
    started = time.time()
    db = sqlite3.connect(args.db, isolation_level=None)
    db.executescript("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -262144;")
    db.executescript(SQLITE_SCHEMA)
    db.execute("BEGIN")
    for name in TABLE_ORDER:
        t = tables[name]
        columns = t["columns"]
        booleans = {i for i, c in enumerate(columns) if c == "thumbnail_is_cropped"}
        marks = ", ".join("?" for _ in columns)
        # INTEGER affinity stores the digits as integers.
        db.executemany(
            f"INSERT INTO {name} ({', '.join(columns)}) VALUES ({marks})",
            copy_rows(os.path.join(args.export_dir, t["file"]), booleans),
        )
        print(f"sqlite: loaded {name} ({t['rows']} rows) at {time.time() - started:.1f} s", file=sys.stderr)
    db.execute("COMMIT")
    db.execute("BEGIN")
    # The primary and alternate references of every model, one row each.
    refs = []
    for model_id, primary, alternates in db.execute("SELECT id, ref_norm, alt_refs_norm FROM models"):
        seen = {primary}
        refs.append((model_id, primary, 1))
        for alternate in alternates.split():
            if alternate not in seen:
                seen.add(alternate)
                refs.append((model_id, alternate, 0))
    db.executemany("INSERT INTO model_refs VALUES (?, ?, ?)", refs)
    db.execute("COMMIT")
    print(f"sqlite: indexes, FTS5 and ANALYZE from {time.time() - started:.1f} s", file=sys.stderr)
    db.executescript("BEGIN;\n" + SQLITE_INDEXES + "\nCOMMIT;")
    db.execute("PRAGMA journal_mode = DELETE")
    db.close()
    size = os.path.getsize(args.db) / 2**20
    print(f"sqlite: {args.db} built in {time.time() - started:.1f} s, {size:.0f} MiB", file=sys.stderr)


def sqlite_connect(db: str) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, check_same_thread=False, cached_statements=256)
    conn.executescript(
        "PRAGMA query_only = 1; PRAGMA mmap_size = 17179869184; PRAGMA cache_size = -65536; "
        "PRAGMA temp_store = MEMORY;"
    )
    return conn


def sqlite_client(db: str, statements: list[str], seed: str, measure_from: float, stop_at: float, results) -> None:
    """One client process: its own read-only connection, requests picked at random from the
    kind's pool until `stop_at`; latency from before the statement to having fetched every
    row. Times are `time.monotonic()` (CLOCK_MONOTONIC), shared by the processes.

    With more clients than cores, the processes are time-sliced by the kernel: the wait for a
    core falls between requests or on the few a preemption interrupts, so the p50 stays near
    the service time while the p99 grows. Compare latency at concurrency 1 and req/s under
    load (README.md)."""
    import random

    rng = random.Random(seed)
    conn = sqlite_connect(db)
    latencies, errors, first_error = [], 0, None
    while True:
        sent = time.monotonic()
        if sent >= stop_at:
            break
        sql = statements[rng.randrange(len(statements))]
        try:
            conn.execute(sql).fetchall()
            failed = None
        except sqlite3.Error as e:
            failed = f"{e}: {sql[:200]}"
        done = time.monotonic()
        if sent < measure_from:
            continue
        if failed:
            errors += 1
            first_error = first_error or failed
        else:
            latencies.append(int((done - sent) * 1e6))
    conn.close()
    results.put((latencies, errors, first_error))


def cmd_sqlite_bench(args) -> None:
    import multiprocessing

    pools = read_requests(args.requests)
    per_kind = translated(pools, "sqlite", args.kinds, args.max_per_kind)
    context = multiprocessing.get_context("fork")
    kinds = []
    for kind, items in per_kind.items():
        statements = [sql for _, sql in items]
        results = context.Queue()
        # Processes, not threads: no GIL in the way, each client runs on whichever core is free.
        start = time.monotonic() + 0.5  # every process forked before the clock starts
        measure_from = start + args.warmup
        stop_at = measure_from + args.duration
        procs = [
            context.Process(
                target=sqlite_client,
                args=(args.db, statements, f"{args.seed}-{kind}-{c}", measure_from, stop_at, results),
            )
            for c in range(args.concurrency)
        ]
        for proc in procs:
            proc.start()
        gathered = [results.get(timeout=args.warmup + args.duration + 600) for _ in procs]
        for proc in procs:
            proc.join()
        secs = max(time.monotonic() - measure_from, 1e-3)
        latencies = [us for r in gathered for us in r[0]]
        errors = sum(r[1] for r in gathered)
        summary = summarize(kind, len(pools[kind]), len(items), latencies, errors, secs)
        first = next((r[2] for r in gathered if r[2]), None)
        if first:
            summary["first_error"] = first
            print(f"warning: sqlite {kind}: {errors} errors; first: {first}", file=sys.stderr)
        kinds.append(summary)
        print(f"sqlite {kind}: {summary['count']} requests, p50 {summary['p50_us'] / 1000:.2f} ms", file=sys.stderr)
    report = {
        "engine": f"sqlite {sqlite3.sqlite_version}",
        "client": (
            f"Python {sys.version.split()[0]} sqlite3, in-process (no network): one process and one "
            "read-only connection per client"
        ),
        "concurrency": args.concurrency,
        "duration_secs": args.duration,
        "warmup_secs": args.warmup,
        "kinds": kinds,
    }
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print_table(report)


# --- checking the answers ---------------------------------------------------------------------


def ours_answer(base: str, url: str):
    """(status, JSON) of our service."""
    try:
        with urllib.request.urlopen(base.rstrip("/") + url, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, None


def shape(kind: str, url: str, status: int, body) -> dict:
    """What is compared of an answer: ids in order and total, or the stats."""
    if status != 200 or body is None:
        return {"status": status}
    if kind == "listing_stats":
        return {k: body[k] for k in ("count", "pricedCount", "low", "median", "high")}
    if "data" in body:
        return {"ids": [int(d["id"]) for d in body["data"]], "total": body["total"]}
    out = {"ids": [int(body["id"])]}
    if kind == "listing_by_id":
        out["model"] = int(body["model"]["id"]) if body.get("model") else None
    return out


def rows_shape(kind: str, rows: list[list]) -> dict:
    if kind == "listing_stats":
        r = rows[0] if rows else [0, 0, None, None, None]
        num = lambda v: None if v in (None, "") else int(float(v))  # noqa: E731
        return {"count": num(r[0]), "pricedCount": num(r[1]), "low": num(r[2]), "median": num(r[3]), "high": num(r[4])}
    if not rows:
        return {"status": 404} if kind in ("model_by_slugs", "listing_by_id") else {"ids": [], "total": 0}
    ids = [int(r[0]) for r in rows]
    if kind in ("model_by_slugs", "listing_by_id"):
        out = {"ids": ids}
        if kind == "listing_by_id":
            model = rows[0][16]  # the first column of the model item
            out["model"] = int(model) if model not in (None, "") else None
        return out
    return {"ids": ids, "total": int(rows[0][-1])}


def pg_rows(args, sql: str) -> list[list]:
    out = subprocess.run(
        ["psql", "-h", args.host, "-p", str(args.port), "-U", args.user, "-d", args.db,
         "-X", "-A", "-t", "-F", "\x1f", "-v", "ON_ERROR_STOP=1", "-c", sql],
        capture_output=True, text=True,
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    return [line.split("\x1f") for line in out.stdout.splitlines() if line]


def compare_shapes(ours: dict, peer: dict, text: bool) -> str:
    if ours == peer:
        return "same"
    if ours.get("status") == 404 and (peer.get("count") == 0 or peer.get("status") == 404 or peer.get("ids") == []):
        return "same (not found)"  # an unknown slug: ours answers 404, the SQL finds nothing
    if "ids" in ours and "ids" in peer and ours.get("total") == peer.get("total"):
        if text:
            overlap = len(set(ours["ids"]) & set(peer["ids"]))
            return f"same total, {overlap}/{len(ours['ids'])} of the page in common (another ranking)"
        if set(ours["ids"]) == set(peer["ids"]):
            return "same total and rows, another order"
    return f"DIFFERENT: ours {json.dumps(ours)[:300]} peer {json.dumps(peer)[:300]}"


def cmd_check(args) -> None:
    pools = read_requests(args.requests)
    sqlite_conn = sqlite_connect(args.sqlite) if args.sqlite else None
    report, differing = [], 0
    for kind in KINDS:
        if kind not in pools or (args.kinds and kind not in args.kinds):
            continue
        for url in spread(pools[kind], args.per_kind):
            status, body = ours_answer(args.base, url)
            ours = shape(kind, url, status, body)
            entry = {"kind": kind, "url": url, "ours": ours}
            peers = []
            if args.port:
                peers.append(("postgresql", lambda sql: pg_rows(args, sql), Sql("pg")))
            if sqlite_conn:
                peers.append(("sqlite", lambda sql: [list(r) for r in sqlite_conn.execute(sql).fetchall()], Sql("sqlite")))
            for name, run, sql in peers:
                try:
                    verdict = compare_shapes(ours, rows_shape(kind, run(sql.translate(kind, url))), kind in TEXT_KINDS)
                except Unsupported as e:
                    verdict = f"not translated: {e}"
                except Exception as e:  # noqa: BLE001 -- reported, not fatal
                    verdict = f"DIFFERENT: error {e}"
                entry[name] = verdict
                differing += verdict.startswith("DIFFERENT")
                print(f"{kind:18} {name:10} {verdict[:160]}  {url}")
            report.append(entry)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"{differing} answers differ", file=sys.stderr)
    if differing and args.strict:
        sys.exit(1)


def cmd_translate(args) -> None:
    pools = read_requests(args.requests)
    for kind, items in translated(pools, args.dialect, args.kinds, args.max_per_kind).items():
        for url, sql in items:
            print(f"-- {kind} {url}\n{sql};\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    def kinds_arg(s):
        s.add_argument("--kinds", type=lambda v: [k for k in v.split(",") if k], default=None,
                       help="comma-separated kinds (default: every kind in REQUESTS)")

    def pg_args(s, port_required=True):
        s.add_argument("--host", default="127.0.0.1")
        s.add_argument("--port", type=int, required=port_required)
        s.add_argument("--user", default="postgres")
        s.add_argument("--db", default="catalogue")

    def load_args(s):
        s.add_argument("--concurrency", type=int, default=32)
        s.add_argument("--duration", type=int, default=10, help="measured seconds per kind")
        s.add_argument("--warmup", type=int, default=2, help="seconds run first per kind, not measured")
        kinds_arg(s)

    s = sub.add_parser("translate")
    s.add_argument("requests")
    s.add_argument("--dialect", choices=["pg", "sqlite"], default="pg")
    s.add_argument("--max-per-kind", type=int, default=MAX_SCRIPTS)
    kinds_arg(s)
    s.set_defaults(func=cmd_translate)

    s = sub.add_parser("pg-load-sql")
    s.add_argument("export_dir")
    s.set_defaults(func=cmd_pg_load_sql)

    s = sub.add_parser("pg-bench")
    s.add_argument("requests")
    s.add_argument("out")
    pg_args(s)
    load_args(s)
    s.add_argument("--threads", type=int, default=2, help="pgbench -j")
    s.add_argument("--mode", choices=["simple", "extended", "prepared"], default="prepared")
    s.add_argument("--work-dir", required=True)
    s.set_defaults(func=cmd_pg_bench)

    s = sub.add_parser("sqlite-load")
    s.add_argument("export_dir")
    s.add_argument("db")
    s.set_defaults(func=cmd_sqlite_load)

    s = sub.add_parser("sqlite-bench")
    s.add_argument("db")
    s.add_argument("requests")
    s.add_argument("out")
    load_args(s)
    s.add_argument("--seed", type=int, default=42)
    s.add_argument("--max-per-kind", type=int, default=MAX_SCRIPTS,
                   help="requests kept per kind (the same spread as pgbench's, which takes at most 128 scripts)")
    s.set_defaults(func=cmd_sqlite_bench)

    s = sub.add_parser("check")
    s.add_argument("requests")
    s.add_argument("--base", required=True, help="our service, without /v1")
    pg_args(s, port_required=False)
    s.add_argument("--sqlite")
    s.add_argument("--per-kind", type=int, default=5)
    s.add_argument("--out")
    s.add_argument("--strict", action="store_true", help="exit 1 when an answer differs")
    kinds_arg(s)
    s.set_defaults(func=cmd_check)

    args = p.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
