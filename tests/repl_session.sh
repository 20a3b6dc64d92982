#!/usr/bin/env bash
# Drives a scripted clang-repl session through scripts/repl (tests/repl_session.txt) and checks its
# transcript: a rejected kernel's diagnostic at the REPL input, the session going on, the fixed kernel
# checked, its CUDA, its cost report, runs on the best device and the interpreter with the result
# printed, a refused launch reported, and a clean exit.
#   usage: repl_session.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
src=$1
build=$2
out=$(VANTAGE_BUILD_DIR="$build" VANTAGE_CACHE_DISABLE=1 bash "$src/scripts/repl" < "$src/tests/repl_session.txt" 2>&1)
rc=$?
echo "$out"
fail=0
expect() {
  if ! grep -qE -- "$1" <<<"$out"; then
    echo "MISSING: $1"
    fail=1
  fi
}
[ "$rc" = 0 ] || { echo "clang-repl exited with $rc"; fail=1; }
expect '^input_line_[0-9]+:1:[0-9]+: error\[V0301\]: cannot write to .y.'
expect '^the session goes on$'
expect '^kernel twice: checked$'
expect '__global__ void __launch_bounds__\(256\)'
expect 'global load 4B +32 +31\.25 3\.906 sectors'
expect 'placement: the CPU backend'
expect '^ran twice on .*: 1024 threads$'
expect '^  \[0, 2, 4, 6, 8, 10, 12, 14, \.\.\.\] \(1000 elements\)$'
expect "kernel 'twice', parameter 'y': the kernel writes it, and it overlaps the buffer given for 'x'"
expect '^y\[999\] = 1998$'
exit $fail
