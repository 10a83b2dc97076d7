#!/usr/bin/env bash
# Latency of the brand and series lists (issue 16 part 4) against a running service, one
# request at a time over one keep-alive connection (curl reads a config of URLs).
#
#   bench/group-lists.sh BASE [ROUNDS]
#       BASE: http://host:port (the service started with --rate-limit 1000000000)
#       ROUNDS: how often each URL is asked (default 20)
#
# URLs: `GET /v1/brands?pageSize=50` pages 1 to 3 by name and page 1 by catalogue depth
# (`sort=models_desc`), and `GET /v1/brands/{slug}/series?pageSize=50` of the ten brands with
# most models. The first round warms up and is left out. Prints, per kind, the requests
# measured, p50, p99 and mean in milliseconds.
set -euo pipefail
BASE=${1:?usage: bench/group-lists.sh BASE [ROUNDS]}
ROUNDS=${2:-20}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

brands=()
for page in 1 2 3; do
  brands+=("$BASE/v1/brands?pageSize=50&page=$page")
done
brands+=("$BASE/v1/brands?pageSize=50&sort=models_desc")
slugs=$(curl -sf "$BASE/v1/brands?pageSize=10&sort=models_desc" |
  python3 -c 'import json,sys; print("\n".join(b["slug"] for b in json.load(sys.stdin)["data"]))')
series=()
for slug in $slugs; do
  series+=("$BASE/v1/brands/$slug/series?pageSize=50")
done

# Times each URL of the kind ROUNDS times (the first round unmeasured); one line per request.
measure() {
  local kind=$1
  shift
  : >"$WORK/$kind.curl"
  for _ in $(seq "$ROUNDS"); do
    for url in "$@"; do
      printf 'url = "%s"\noutput = "/dev/null"\n' "$url" >>"$WORK/$kind.curl"
    done
  done
  curl -s --config "$WORK/$kind.curl" -w '%{http_code} %{time_total}\n' |
    tail -n +$(($# + 1)) >"$WORK/$kind.times"
  if grep -qv '^200 ' "$WORK/$kind.times"; then
    echo "$kind: a request did not answer 200" >&2
    exit 1
  fi
  awk '{print $2 * 1000}' "$WORK/$kind.times" | sort -n | awk -v kind="$kind" '
    { v[NR] = $1; sum += $1 }
    END {
      p50 = v[int((NR - 1) * 0.50) + 1]; p99 = v[int((NR - 1) * 0.99) + 1]
      printf "| %s | %d | %.2f | %.2f | %.2f |\n", kind, NR, p50, p99, sum / NR
    }'
}

echo "| kind | requests | p50 ms | p99 ms | mean ms |"
echo "|---|--:|--:|--:|--:|"
measure brands "${brands[@]}"
measure series "${series[@]}"
