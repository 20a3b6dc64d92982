#!/usr/bin/env bash
# `vantage tune NAME` for each tunable example named after the CLI (every one by default) on the
# interpreter at a size smaller than their tiles (every configuration built, lowered, run and checked
# against its workload's reference, then timed once: the interpreter's times rank nothing), and the
# errors for an example that declares no space and for no example at all.
set -euo pipefail
cli="$1"
shift
examples=("$@")
[ ${#examples[@]} -gt 0 ] || examples=(sgemm_smem sgemm_reg2d sgemm_pipelined scan_tiled)
fail() { echo "tune_examples.sh: $*" >&2; exit 1; }
for ex in "${examples[@]}"; do
  out=$("$cli" tune "$ex" --device interpreter --size 8 --fresh --repetitions 1 2>/dev/null)
  echo "$out" | tail -2
  configs=$(echo "$out" | sed -n "s/^tune $ex: \([0-9]*\) configurations, \(K=8 M=8 N=8\|n=8\), on interpreter.*/\1/p")
  [ -n "$configs" ] && [ "$configs" -gt 1 ] || fail "$ex: no configuration count"
  echo "$out" | grep -q "^$configs measured now (exhaustive search), 0 from stored results (not stored), 0 failed" ||
    fail "$ex: not every one of $configs configurations was measured and right"
  echo "$out" | grep -q "^best: " || fail "$ex: no best configuration"
done
set +e
err=$("$cli" tune transpose 2>&1); rc=$?
set -e
[ "$rc" = 2 ] && echo "$err" | grep -q "declares no configuration space; the tunable ones are sgemm_smem" ||
  fail "tune transpose: exit $rc, '$err'"
set +e
err=$("$cli" tune 2>&1); rc=$?
set -e
[ "$rc" = 2 ] && echo "$err" | grep -q "name the example to tune" || fail "tune without a name: exit $rc, '$err'"
echo "ok"
