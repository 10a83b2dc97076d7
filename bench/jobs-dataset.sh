# Sourced by bench/jobs.sh and bench/ingest.sh: their shared dataset. With BENCH, MODELS,
# LISTINGS, SEED and CACHE set, generates the catalogue and its four provider snapshots into
# CACHE once, the snapshots concatenated into one (CACHE/snapshot.jsonl: distinct source ids).
# `imported_catalogue DIR` imports the dataset's catalogue into DIR with BIN once (bench/ingest.sh
# and bench/picture-cost.sh copy it before each ingest).
if [[ ! -d $CACHE ]]; then
  echo ">> generating $MODELS models, $LISTINGS listings into $CACHE" >&2
  "$BENCH" generate --models "$MODELS" --listings "$LISTINGS" --seed "$SEED" --out "$CACHE.part" > /dev/null
  cat "$CACHE.part"/listings/*.jsonl > "$CACHE.part/snapshot.jsonl"
  rm -rf "$CACHE.part/listings"
  mv "$CACHE.part" "$CACHE"
fi

imported_catalogue() {
  local dir=$1
  if [[ ! -d $dir ]]; then
    echo ">> importing the catalogue into $dir" >&2
    "$BIN" --data-dir "$dir.part" import "$CACHE" > /dev/null
    mv "$dir.part" "$dir"
  fi
}
