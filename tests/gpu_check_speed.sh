#!/usr/bin/env bash
# scripts/gpu/gpu-check's speed part, run here on a bundle of stand-ins (no GPU: a vantage that sees
# one, a bench that lists and "times" rows with figures written here, CUB's and cuBLAS's lines): which
# rows run in the main process, which alone, which are left out as settled, GPU_CHECK_SPEED_ROWS, and
# the table's verdict. The figures are not measurements; the orchestration is what is tested.
#   gpu_check_speed.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: gpu_check_speed.sh SOURCE_DIR}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
b=$dir/bundle
mkdir -p "$b/bin" "$b/scripts" "$b/cache" "$b/twins"
cp "$src/scripts/gpu/gpu-check" "$src/scripts/gpu/speed_table.py" "$b/scripts/"
printf '' | gzip > "$b/cache/examples.vcb.gz"

cat > "$b/bin/vantage" <<'EOF'
#!/usr/bin/env bash
[ "$1" = devices ] && echo "  GPU 0 (stand-in, sm_90)"
[ "$1" = examples ] && echo "saxpy  a stand-in"
exit 0
EOF
# The bench: the rows below, a filter as Google Benchmark takes it (a leading '-' negates), each row
# run written to --benchmark_out with its figures, and the order of its processes kept in calls.txt.
cat > "$b/bin/vantage_bench_speed" <<'EOF'
#!/usr/bin/env bash
rows="sgemm_vec/4096 vec_copy/n=2^26 scan_tiled/n=2^28 scan_tiled_t512_i12/n=2^28 gemm_wgmma_bf16_wide/4096
gemm_wgmma_bf16_wide_g8/4096 sgemm_pipelined_64x128x16/4096 sgemm_pipelined_128x128x8_b2/4096
gemm_wgmma_bf16_persistent/4096 gemm_wgmma_bf16_wide_tma/4096"
filter=. list=0 out= twin=1
for a in "$@"; do
  case "$a" in
    --no-twin) twin=0 ;;
    --benchmark_filter=*) filter=${a#--benchmark_filter=} ;;
    --benchmark_list_tests) list=1 ;;
    --benchmark_out=*) out=${a#--benchmark_out=} ;;
  esac
done
names=$(for r in $rows; do echo "speed/$r/iterations:1/manual_time"; done)
if [ "${filter#-}" != "$filter" ]; then picked=$(grep -vE -- "${filter#-}" <<< "$names" || true)
else picked=$(grep -E -- "$filter" <<< "$names" || true); fi
if [ "$list" = 1 ]; then echo "$picked"; exit 0; fi
echo "run: $(echo $picked)$([ "$twin" = 0 ] && echo ' (no twin)')" >> "$(dirname "$0")/../calls.txt"
# STANDIN_TWIN_FAILS: the wide wgmma GEMM's twin faults (the process ends, writing nothing).
if [ -n "${STANDIN_TWIN_FAILS:-}" ] && [ "$twin" = 1 ] && grep -q 'gemm_wgmma_bf16_wide/' <<< "$picked"; then exit 1; fi
{
  echo '{"context": {}, "benchmarks": ['
  sep=
  for n in $picked; do
    r=${n#speed/}; r=${r%/iterations:1/manual_time}
    case "$r" in
      *wgmma*|sgemm*) extra='"TFLOPs": 100.0' ;;
      *) extra='"GBps": 3000.0, "copy_ms": 0.1, "copy_GBps": 4000.0, "of_copy": 0.75' ;;
    esac
    printf '%s{"name": "%s", "run_type": "iteration", "vantage_ms": 1.0, "vantage_min_ms": 0.9, "vantage_max_ms": 1.1, "checks": 0, %s}\n' \
      "$sep" "$n" "$extra"
    sep=,
  done
  echo ']}'
} > "$out"
EOF
cat > "$b/bin/cub_scan" <<'EOF'
#!/usr/bin/env bash
echo '{"n": 268435456, "log2n": 28, "scan_ms": 0.9, "copy_ms": 0.5}'
EOF
cat > "$b/scripts/cublas_sgemm.py" <<'EOF'
print('{"mode": "bf16", "n": 4096, "ms": 1.0, "TFLOPs": 137.4, "out": "f32"}')
EOF
chmod +x "$b/bin/"* "$b/scripts/gpu-check"

fail() { echo "gpu_check_speed.sh: $*" >&2; exit 1; }
run() {  # run OUT [VAR=VALUE...]: the speed part alone
  local o=$1
  shift
  rm -f "$b/calls.txt"
  env "$@" GPU_CHECK_PARTS=speed TMPDIR="$dir" "$b/scripts/gpu-check" "$o" > /dev/null 2>&1 || true
}

# By default: the settled variants left out, the waiting GEMMs and those with a wgmma twin each in a
# process of its own after the rest.
run "$dir/all"
cat "$b/calls.txt"
[ "$(grep -c '^run:' "$b/calls.txt")" = 4 ] || fail "the main process and one for each of the three GEMMs alone"
main=$(head -1 "$b/calls.txt")
for r in sgemm_vec/4096 vec_copy scan_tiled/n= sgemm_pipelined_128x128x8_b2; do
  grep -q "speed/$r" <<< "$main" || fail "$r not in the main process: $main"
done
for r in scan_tiled_t512 wide_g8 sgemm_pipelined_64x128x16/ persistent wide_tma gemm_wgmma_bf16_wide/; do
  grep -q "$r" <<< "$main" && fail "$r in the main process: $main"
done
grep -q '^run: speed/gemm_wgmma_bf16_persistent/4096' "$b/calls.txt" || fail "the persistent GEMM alone"
grep -q '^run: speed/gemm_wgmma_bf16_wide_tma/4096' "$b/calls.txt" || fail "the TMA-store GEMM alone"
grep -qx 'run: speed/gemm_wgmma_bf16_wide/4096/iterations:1/manual_time' "$b/calls.txt" || fail "the wgmma GEMM alone"
grep -q '(no twin)' "$b/calls.txt" && fail "a row run again without its twin, though none failed"
grep -q '^speed .*PASS .*7 rows measured, 0 not' "$dir/all/summary.txt" || fail "the part's verdict: $(cat "$dir/all/summary.txt")"
grep -q '^| gemm_wgmma_bf16_wide_tma | 4096 | 1.0000 ' "$dir/all/speed.txt" || fail "a row run alone in the table"

# A wgmma twin that faults: its row is timed again without it, and the part still passes.
run "$dir/twin" STANDIN_TWIN_FAILS=1
cat "$b/calls.txt"
grep -qx 'run: speed/gemm_wgmma_bf16_wide/4096/iterations:1/manual_time (no twin)' "$b/calls.txt" ||
  fail "the row again without its twin"
[ "$(grep -c '(no twin)' "$b/calls.txt")" = 1 ] || fail "only the row whose twin failed again"
grep -q 'gemm_wgmma_bf16_wide/4096.*with its twin; again without it' "$dir/twin/speed.txt" || fail "the failure noted"
grep -q '^speed .*PASS .*7 rows measured, 0 not' "$dir/twin/summary.txt" || fail "$(cat "$dir/twin/summary.txt")"

# GPU_CHECK_SPEED_ROWS: the settled rows it names run; a waiting GEMM it names still runs alone.
run "$dir/some" GPU_CHECK_SPEED_ROWS='scan_tiled_t|persistent'
cat "$b/calls.txt"
[ "$(grep -c '^run:' "$b/calls.txt")" = 2 ] || fail "one main process and one alone"
grep -qx 'run: speed/scan_tiled_t512_i12/n=2^28/iterations:1/manual_time' "$b/calls.txt" || fail "the settled row named"
grep -q '^speed .*PASS .*2 rows measured, 0 not' "$dir/some/summary.txt" || fail "$(cat "$dir/some/summary.txt")"

# Naming only a waiting GEMM: no main process at all, and the table of that row still written.
run "$dir/alone" GPU_CHECK_SPEED_ROWS='wide_tma'
[ "$(grep -c '^run:' "$b/calls.txt")" = 1 ] || fail "no main process when no row is for it: $(cat "$b/calls.txt")"
grep -q '^speed .*PASS .*1 rows measured, 0 not' "$dir/alone/summary.txt" || fail "$(cat "$dir/alone/summary.txt")"
echo "gpu_check_speed.sh: ok"
