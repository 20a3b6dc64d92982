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

libdir=$(ls -d "$work/prefix"/lib*/pkgconfig | head -n 1)
export PKG_CONFIG_PATH="$libdir"
# shellcheck disable=SC2046
c++ $flags "$here/consumer/main.cpp" -o "$work/consumer_pc" $(pkg-config --cflags --libs vantage)
LD_LIBRARY_PATH="$work/prefix/lib" "$work/consumer_pc" | tee "$work/out2"
grep -q "consumer: saxpy checked" "$work/out2"
echo "install: the installed CLI ran; find_package and pkg-config consumers built and ran"
