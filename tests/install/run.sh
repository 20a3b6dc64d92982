#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then builds and runs a tiny consumer twice: once
# through find_package(vantage CONFIG) and once through pkg-config.
# Usage: run.sh BUILD_DIR INSTALL_TEST_DIR [SANITIZE]
set -euo pipefail
build=$1
here=$2
sanitize=${3:-OFF}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

flags=""
case "$sanitize" in ON|on|1|TRUE|true) flags="-fsanitize=address,undefined" ;; esac

cmake --install "$build" --prefix "$work/prefix" >/dev/null

# The installed CLI starts on its own (its run path finds the installed library) and works. (grep
# reads all of the output: with -q it may leave while the CLI still writes, and pipefail would then
# report the CLI's SIGPIPE, as it did once the help passed the 4 KiB of one buffered write.)
env -u LD_LIBRARY_PATH "$work/prefix/bin/vantage" --help | grep "vantage - build, check and inspect GPU kernels" >/dev/null
env -u LD_LIBRARY_PATH "$work/prefix/bin/vantage" check saxpy | grep "saxpy .*ok" >/dev/null
env -u LD_LIBRARY_PATH "$work/prefix/bin/vantage" version >/dev/null

cmake -S "$here/consumer" -B "$work/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_CXX_FLAGS="$flags" >/dev/null
cmake --build "$work/cmake" >/dev/null
LD_LIBRARY_PATH="$work/prefix/lib" "$work/cmake/consumer" | tee "$work/out1"
grep -q "consumer: saxpy checked" "$work/out1"

# The kernel library built beside it, loaded by the installed CLI: every command takes its kernel.
lib="$work/cmake/libmykernels.so"
cli() { env -u LD_LIBRARY_PATH "$work/prefix/bin/vantage" --load "$lib" "$@"; }
cli examples | grep "^scale_by_two .*from a library outside the tree" >/dev/null
cli check scale_by_two | grep "scale_by_two .*ok" >/dev/null
cli check >"$work/check_all" && grep "scale_by_two .*ok" "$work/check_all" >/dev/null
cli ir scale_by_two | grep "kernel scale_by_two" >/dev/null
cli lower scale_by_two --threads 128 >/dev/null
cli cuda scale_by_two | grep 'extern "C" __global__' >/dev/null
cli report scale_by_two --size n=4096 --blocks 32 | grep -i "scale_by_two" >/dev/null
if env -u LD_LIBRARY_PATH "$work/prefix/bin/vantage" version | grep -q "NVRTC: not available"; then
  echo "install: NVRTC not available here: ptx and compile of the loaded kernel skipped"
else
  cli ptx scale_by_two | grep "\.entry" >/dev/null
  cli compile scale_by_two | grep "scale_by_two" >/dev/null
fi
# run and tune: the kernel that registers its run and space, on the interpreter (every host has it).
cli run scale_tiled --device interpreter | grep "^scale_tiled n=4096: .* \[ok\]" >/dev/null
cli run scale_tiled --device interpreter --size n=1000 | grep "^scale_tiled n=1000: .* \[ok\]" >/dev/null
cli tune scale_tiled --device interpreter --fresh --size n=2000 --repetitions 1 2>/dev/null >"$work/tune"
grep "^9 measured now (exhaustive search)" "$work/tune" >/dev/null && grep "^best: items=" "$work/tune" >/dev/null
cli tune scale_tiled --device interpreter --fresh --search model --samples 3 --repetitions 1 2>/dev/null |
  grep "^3 measured now (model search)" >/dev/null
if cli run scale_by_two 2>"$work/err"; then echo "a kernel without a registered run ran"; exit 1; fi
grep "registers no run" "$work/err" >/dev/null
if cli tune scale_by_two 2>"$work/err"; then echo "a kernel without a space was tuned"; exit 1; fi
grep "registers no configuration space" "$work/err" >/dev/null
if env -u LD_LIBRARY_PATH "$work/prefix/bin/vantage" --load "$work/nothing.so" check 2>"$work/err"; then
  echo "a library that does not exist was loaded"; exit 1
fi
grep "vantage: --load $work/nothing.so:" "$work/err" >/dev/null

libdir=$(ls -d "$work/prefix"/lib*/pkgconfig | head -n 1)
export PKG_CONFIG_PATH="$libdir"
# shellcheck disable=SC2046
c++ $flags "$here/consumer/main.cpp" -o "$work/consumer_pc" $(pkg-config --cflags --libs vantage)
LD_LIBRARY_PATH="$work/prefix/lib" "$work/consumer_pc" | tee "$work/out2"
grep -q "consumer: saxpy checked" "$work/out2"
echo "install: the installed CLI ran, on its examples and a kernel library's; find_package and pkg-config consumers built and ran"
