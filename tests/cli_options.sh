#!/usr/bin/env bash
# The CLI refuses what it cannot read rather than guess: a count, size, seed or device ordinal that
# is not a whole number in its range exits 2 naming the option (it was read as 0, or as its leading
# digits); a launch's value that its parameter's type cannot hold is refused by name; and `vantage
# cache` refuses an option or operand its command does not take before acting (`clear --what` cleared
# the cache); a run past the host's free memory is refused by name, not ended by the OS.
set -uo pipefail
cli="$1"
fail() { echo "cli_options.sh: $*" >&2; exit 1; }
# refused RC TEXT ARGS...: exits RC and prints TEXT.
refused() {
  local rc_want="$1" text="$2"
  shift 2
  local err rc
  err=$("$cli" "$@" 2>&1 >/dev/null)
  rc=$?
  [ "$rc" = "$rc_want" ] || fail "vantage $*: exit $rc, not $rc_want ($err)"
  echo "$err" | grep -qF -- "$text" || fail "vantage $*: '$err' does not say '$text'"
}
refused 2 "--size wants NAME=VALUE with a whole number for VALUE, not 'n=abc'" run saxpy --size n=abc
refused 2 "not 'n=12x'" run saxpy --size n=12x
refused 2 "not '=5'" cuda saxpy --size =5
refused 2 "not 'n=99999999999999999999'" cuda saxpy --size n=99999999999999999999
refused 2 "--size n=-5: an example's sizes are counts, at least 0" run saxpy --size n=-5
refused 2 "cpu:THREADS wants a count of host threads" run saxpy --device cpu:x
refused 2 "gpu:N wants a GPU's ordinal" run saxpy --device gpu:-1
refused 2 "the device is interpreter, cpu, cpu:THREADS, gpu, gpu:N or best, not 'tpu'" run saxpy --device tpu
refused 2 "--seed wants a number of at least 0, not '-1'" run saxpy --seed -1
refused 2 "--blocks wants a count from 1" report saxpy --blocks 0
refused 2 "--threads wants a count from 1 to 1024, not 'many'" report saxpy --threads many
refused 2 "--threads wants a count of threads a block from 1 to 1024, not '2000'" cuda saxpy --threads 2000
refused 1 "the value 1000000000000 of 'n' does not fit its type i32" lower saxpy --size n=1000000000000
refused 2 "cpu:THREADS wants a count of host threads" tune scan_tiled --device cpu:abc
refused 2 "--budget wants a number of seconds above 0, not '0'" tune scan_tiled --budget 0
refused 2 "--compile-threads wants a count from 1 to 1024, not '0'" tune scan_tiled --compile-threads 0
refused 2 "--seed wants a number of at least 0, not '1x'" tune scan_tiled --seed 1x
refused 2 "NAME=N with N at least 1, not 'n=12x'" tune scan_tiled --size n=12x
# A run whose buffers do not fit in the memory the host has free fails with a message naming the
# sizes (on the interpreter at n = 2^31 - 1 the OS's out-of-memory killer ended it, or another
# process). Here a data limit of 1 GB stands for the host's memory; the sanitizers' builds cannot run
# under one (their shadow maps terabytes), and run sets no cap there.
if [ "${2:-}" != sanitized ]; then
  err=$(
    ulimit -d 1000000
    "$cli" run saxpy --size n=500000000 2>&1 >/dev/null
  )
  rc=$?
  [ "$rc" = 1 ] || fail "run saxpy at n=500000000 under a 1 GB data limit: exit $rc, not 1 ($err)"
  echo "$err" | grep -qE "saxpy at n=500000000 needs more memory than this host has free \([0-9.]+ GiB" ||
    fail "run saxpy at n=500000000 under a 1 GB data limit says '$err'"
  err=$(
    ulimit -d 1000000
    "$cli" tune scan_tiled --device cpu --size n=500000000 --fresh 2>&1 >/dev/null
  )
  rc=$?
  [ "$rc" = 1 ] || fail "tune scan_tiled at n=500000000 under a 1 GB data limit: exit $rc, not 1 ($err)"
  echo "$err" | grep -qE "^vantage tune: scan_tiled at n=500000000 needs more memory than this host has free" ||
    fail "tune scan_tiled at n=500000000 under a 1 GB data limit says '$err'"
fi
# What is a number still runs: a sign, and a size class of a negative value (a kernel's business).
"$cli" run saxpy --size n=+100 --device cpu:0 | grep -q "saxpy n=100 .*result matches the reference" ||
  fail "run saxpy --size n=+100 --device cpu:0 did not run"
"$cli" cuda sgemm_smem --size K=-5 >/dev/null || fail "cuda sgemm_smem --size K=-5 was refused"
# The cache's commands: a mistyped option or an extra operand is refused and nothing is removed.
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export VANTAGE_CACHE_DIR="$dir"
"$cli" compile saxpy --cache >/dev/null || fail "compile saxpy --cache failed"
entries() { "$cli" cache ls | tail -n +2 | wc -l; }
[ "$(entries)" = 1 ] || fail "the cache does not hold saxpy's entry"
refused 2 "clear does not take the option '--what'" cache clear --what
refused 2 "clear takes no FILE or NAME: 'saxpy' is one too many" cache clear saxpy
refused 2 "prune does not take the option '--max'" cache prune --max 0
refused 2 "ls does not take the option '--bogus'" cache ls --bogus
refused 2 "verify takes one FILE or NAME: 'b' is one too many" cache verify a b
[ "$(entries)" = 1 ] || fail "a refused command removed the entry"
"$cli" cache prune --max-bytes 0 --json | grep -q '"evicted_bytes": [1-9]' || fail "prune --max-bytes 0 evicted nothing"
echo "ok"
