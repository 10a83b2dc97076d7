# Sourced by bench/jobs.sh and bench/ingest.sh: their shared dataset. With BENCH, MODELS,
# LISTINGS, SEED and CACHE set, generates the catalogue and its four provider snapshots into
# CACHE once, the snapshots concatenated into one (CACHE/snapshot.jsonl: distinct source ids).
if [[ ! -d $CACHE ]]; then
  echo ">> generating $MODELS models, $LISTINGS listings into $CACHE" >&2
  "$BENCH" generate --models "$MODELS" --listings "$LISTINGS" --seed "$SEED" --out "$CACHE.part" > /dev/null
  cat "$CACHE.part"/listings/*.jsonl > "$CACHE.part/snapshot.jsonl"
  rm -rf "$CACHE.part/listings"
  mv "$CACHE.part" "$CACHE"
fi
