#!/usr/bin/env bash
# scripts/gpu/speed_table.py on figures written here by hand (not measurements: the script's parsing,
# ratios and goals are what is tested): rows of bench_speed's JSON, CUB's and cuBLAS's lines.
#   speed_table.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: speed_table.sh SOURCE_DIR}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
row() {  # row NAME COUNTERS...
  printf '{"name": "speed/%s/iterations:1/manual_time", "run_type": "iteration", %s}' "$1" "$2"
}
{
  echo '{"context": {}, "benchmarks": ['
  row sgemm_vec/4096 '"vantage_ms": 10.0, "vantage_min_ms": 9.5, "vantage_max_ms": 11.0, "checks": 0, "TFLOPs": 13.7, "GBps": 27, "twin_ms": 9.0, "speed_of_twin": 0.9'
  echo ,
  row sgemm_warptile/4096 '"vantage_ms": 5.0, "vantage_min_ms": 4.9, "vantage_max_ms": 5.2, "checks": 0, "TFLOPs": 27.5, "GBps": 54, "twin_ms": 5.0, "speed_of_twin": 1.0'
  echo ,
  row transpose/8192x8192 '"vantage_ms": 0.25, "vantage_min_ms": 0.24, "vantage_max_ms": 0.3, "checks": 0, "GBps": 2147, "twin_ms": 0.26, "speed_of_twin": 1.04, "copy_ms": 0.2, "copy_GBps": 2684, "of_copy": 0.8'
  echo ,
  row scan_lookback/n=2^28 '"vantage_ms": 1.0, "vantage_min_ms": 0.9, "vantage_max_ms": 1.1, "checks": 4, "GBps": 2147, "twin_ms": 1.0, "speed_of_twin": 1.0, "copy_ms": 0.8, "copy_GBps": 2684, "of_copy": 0.8'
  echo ,
  row radix_sort/n=2^28 '"vantage_ms": 40.0, "vantage_min_ms": 39.0, "vantage_max_ms": 41.0, "checks": 8, "GBps": 107'
  echo ,
  row radix_sort_onesweep/n=2^28 '"vantage_ms": 25.0, "vantage_min_ms": 24.0, "vantage_max_ms": 26.0, "checks": 8, "GBps": 172'
  echo ,
  row device_sum/n=2^28 '"vantage_ms": 0.5, "vantage_min_ms": 0.45, "vantage_max_ms": 0.55, "checks": 0, "GBps": 2147, "copy_ms": 0.8, "copy_GBps": 2684, "of_copy": 1.6'
  echo ,
  row igemm_mma/4096 '"vantage_ms": 1.0, "vantage_min_ms": 0.9, "vantage_max_ms": 1.1, "checks": 0, "TFLOPs": 137.4'
  echo ,
  row igemm_wgmma/4096 '"vantage_ms": 0.3125, "vantage_min_ms": 0.31, "vantage_max_ms": 0.32, "checks": 0, "TFLOPs": 439.8'
  echo ,
  row gemm_wgmma_bf16/4096 '"vantage_ms": 0.3, "vantage_min_ms": 0.29, "vantage_max_ms": 0.31, "checks": 0, "TFLOPs": 458.1'
  echo ,
  printf '{"name": "speed/vec_copy/n=2^26/iterations:1/manual_time", "error_occurred": true, "error_message": "no GPU"}'
  echo ']}'
} > "$dir/speed.json"
# A row run alone (gpu-check runs the kernels that could deadlock each in its own process): a second file.
{
  echo '{"context": {}, "benchmarks": ['
  row gemm_wgmma_bf16_wide/4096 '"vantage_ms": 0.2, "vantage_min_ms": 0.19, "vantage_max_ms": 0.21, "checks": 0, "TFLOPs": 687.2, "twin_differs": 1'
  echo ']}'
} > "$dir/speed_alone.json"
echo '{"n": 268435456, "log2n": 28, "scan_ms": 1.2, "reduce_ms": 0.475, "radix_ms": 20.0, "copy_ms": 0.8}' > "$dir/cub.jsonl"
{
  echo '{"mode": "fp32", "n": 4096, "ms": 4.0, "TFLOPs": 34.4, "out": "f32"}'
  echo '{"mode": "bf16", "n": 4096, "ms": 0.19, "TFLOPs": 723.4, "out": "f32"}'
  echo '{"mode": "int8", "n": 4096, "ms": 0.25, "TFLOPs": 549.8, "out": "i32"}'
} > "$dir/cublas.jsonl"
set +e
python3 "$src/scripts/gpu/speed_table.py" "$dir/speed.json" "$dir/speed_alone.json" --cub "$dir/cub.jsonl" --cublas "$dir/cublas.jsonl" > "$dir/out.txt"
rc=$?
set -e
cat "$dir/out.txt"
fail() { echo "speed_table.sh: $*" >&2; exit 1; }
[ "$rc" = 1 ] || fail "a row that did not run must make it exit 1 (got $rc)"
grep -q '^| sgemm_warptile | 4096 | 5.0000 (4.9000–5.2000) | 0 | 27.5 TFLOP/s | 5.0000 | 1.000 |' "$dir/out.txt" || fail "the warptile row"
grep -q '| cuBLAS fp32 | 4.0000 | 0.800 |' "$dir/out.txt" || fail "cuBLAS's time over the kernel's"
grep -q '^| gemm_wgmma_bf16_wide | 4096 | 0.2000 .* | twin differs | – |' "$dir/out.txt" || fail "a twin whose result differs"
grep -q '^MISSED .*0.95 of its twin.*slowest: sgemm_vec/4096: 0.900' "$dir/out.txt" || fail "the twin goal"
grep -q '^MISSED .*best sgemm.*(sgemm_warptile): 0.800 (goal 0.9)' "$dir/out.txt" || fail "the best sgemm is the fastest row"
grep -q '^MET .*scan at 2^28 at least CUB.*: 1.200' "$dir/out.txt" || fail "CUB's time over the scan's"
grep -q '^MISSED .*scan at 2^28 at least 0.90 of the copy.*: 0.800' "$dir/out.txt" || fail "the scan's copy goal"
grep -q '^UNMEASURED .*wgmma GEMM .* 8192' "$dir/out.txt" || fail "an unmeasured goal"
grep -q '^NOT RUN    speed/vec_copy/n=2^26.*no GPU' "$dir/out.txt" || fail "the row that did not run"
grep -q '^| gemm_wgmma_bf16 | 4096 | 0.3000 .* | cuBLAS bf16 | 0.1900 | 0.633 |' "$dir/out.txt" || fail "the bf16 baseline"
grep -q '^MET .*best bf16 wgmma GEMM .* 4096^3 (gemm_wgmma_bf16_wide): 0.950' "$dir/out.txt" || fail "the best wgmma GEMM"
grep -q '^| device_sum | n=2^28 | 0.5000 .* | CUB reduce | 0.4750 | 0.950 |' "$dir/out.txt" || fail "CUB's reduce"
grep -q '^MET .*device_sum at 2^28 at least 0.90 of CUB.s reduce: 0.950' "$dir/out.txt" || fail "the reduce goal"
grep -q '^UNMEASURED .*compact at 2^24 at least 0.90 of CUB.s select' "$dir/out.txt" || fail "the select goal"
grep -q '^| igemm_mma | 4096 | 1.0000 .* | cuBLAS int8 | 0.2500 | 0.250 |' "$dir/out.txt" || fail "the int8 baseline"
grep -q '^| igemm_wgmma | 4096 | 0.3125 .* | cuBLAS int8 | 0.2500 | 0.800 |' "$dir/out.txt" || fail "the wgmma int8 baseline"
grep -q '^MET .*int8 GEMM at least 0.70 of cuBLAS int8 at 4096^3 (igemm_wgmma): 0.800' "$dir/out.txt" ||
  fail "the int8 goal: the faster of the two int8 GEMMs"
grep -q '^UNMEASURED .*radix_sort at 2^26 at least 0.90 of CUB.s radix' "$dir/out.txt" || fail "the radix goal"
grep -q '^| radix_sort_onesweep | n=2^28 | 25.0000 .* | CUB radix | 20.0000 | 0.800 |' "$dir/out.txt" || fail "CUB's radix sort"
grep -q '^MISSED .*radix_sort at 2^28 at least 0.90 of CUB.s radix: 0.800 (goal 0.9)' "$dir/out.txt" || fail "the faster sort's goal"
grep -q '^goals: 4 of 27 met; 11 rows measured, 1 not$' "$dir/out.txt" || fail "the count"
echo "speed_table.sh: ok"
