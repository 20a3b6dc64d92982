#!/usr/bin/env bash
# `vantage tune sgemm` twice on the best device of this host at a small size: the first run measures
# every configuration and writes CSV and SVG; the second measures none (every result is stored); the
# model and random searches measure their samples; a bad --search is refused.
set -euo pipefail
cli="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
size=48
"$cli" devices | grep -q "best: CPU\|best: GPU" || size=8  # the interpreter is slow
first=$("$cli" tune sgemm --size "$size" --results "$dir/results" --csv "$dir/t.csv" --svg "$dir/t.svg" 2>/dev/null)
echo "$first" | tail -3
configs=$(echo "$first" | sed -n 's/^tune sgemm_reg1d: \([0-9]*\) configurations.*/\1/p')
[ -n "$configs" ] && [ "$configs" -gt 1 ] || { echo "no configuration count in the output"; exit 1; }
echo "$first" | grep -q "^$configs measured now (exhaustive search), 0 from stored results" || { echo "the first run did not measure all $configs"; exit 1; }
echo "$first" | grep -q "^best: " || { echo "no best configuration"; exit 1; }
[ "$(wc -l < "$dir/t.csv")" -eq $((configs + 1)) ] || { echo "the CSV does not have a header and $configs rows"; exit 1; }
head -c 4 "$dir/t.svg" | grep -q "<svg" || { echo "the heatmap is not an SVG"; exit 1; }
second=$("$cli" tune sgemm --size "$size" --results "$dir/results" 2>/dev/null)
echo "$second" | tail -2
echo "$second" | grep -q "^0 measured now (exhaustive search), $configs from stored results" || { echo "the second run measured again"; exit 1; }
# The model-based and random searches measure their sample and no more.
for how in model random; do
  third=$("$cli" tune sgemm --size "$size" --fresh --search "$how" --samples 4 --seed 7 2>/dev/null)
  echo "$third" | grep -q "^4 measured now ($how search), 0 from stored results" || { echo "the $how search did not measure 4"; echo "$third"; exit 1; }
  echo "$third" | grep -q "^best: " || { echo "no best configuration from the $how search"; exit 1; }
done
if "$cli" tune sgemm --search guess 2>"$dir/err"; then echo "--search guess was taken"; exit 1; fi
grep -q "search is exhaustive, random or model, not 'guess'" "$dir/err" || { echo "no message for --search guess"; exit 1; }
echo "ok"
