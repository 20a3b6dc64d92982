#!/usr/bin/env bash
# A kernel run on the CPU backend compiles its object code once: a second process with the same
# cache directory loads it from the disk (the debug log says where each object came from).
set -euo pipefail
cli="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
first=$(VANTAGE_CACHE_DIR="$dir" VANTAGE_LOG=debug "$cli" run sgemm_smem --device cpu 2>&1)
second=$(VANTAGE_CACHE_DIR="$dir" VANTAGE_LOG=debug "$cli" run sgemm_smem --device cpu 2>&1)
grep -q "object from compiled" <<<"$first" || { echo "first run: no object compiled"; echo "$first"; exit 1; }
if grep -q "object from compiled" <<<"$second"; then echo "second run compiled again"; echo "$second"; exit 1; fi
grep -q "object from disk" <<<"$second" || { echo "second run: no object from the disk"; echo "$second"; exit 1; }
grep -q "result matches the reference" <<<"$second" || { echo "second run: wrong result"; echo "$second"; exit 1; }
echo "ok: compiled once, then loaded from $dir"
