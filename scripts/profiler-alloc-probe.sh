#!/usr/bin/env bash
# Evidence for docs/profiler.md: with oneDNN on, does the counting c10 CPU
# allocator see every byte a convolution / linear layer allocates? Builds
# crates/remat-profiler/probe/alloc_probe.cpp against $LIBTORCH (g++, ~2 min)
# and runs it with oneDNN on and off. Usage: scripts/profiler-alloc-probe.sh [BATCH [PX]]
set -euo pipefail
cd "$(dirname "$0")/.."
: "${LIBTORCH:=$PWD/.tools/libtorch/torch}"
[ -d "$LIBTORCH/include" ] || { echo "LIBTORCH=$LIBTORCH has no include/ (run scripts/setup-libtorch.sh)" >&2; exit 2; }
out="${TMPDIR:-/tmp}/remat-alloc-probe"
src=crates/remat-profiler/probe/alloc_probe.cpp
if [ ! -x "$out" ] || [ "$src" -nt "$out" ]; then
  g++ -O1 -std=c++17 -D_GLIBCXX_USE_CXX11_ABI=1 -w "$src" \
    -I"$LIBTORCH/include" -I"$LIBTORCH/include/torch/csrc/api/include" \
    -L"$LIBTORCH/lib" -Wl,-rpath,"$LIBTORCH/lib" -ltorch_cpu -lc10 -o "$out"
fi
"$out" on "${1:-8}" "${2:-64}"
"$out" off "${1:-8}" "${2:-64}"
