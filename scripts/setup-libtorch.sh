#!/usr/bin/env bash
# Installs the CPU libtorch that the profiler (crates/remat-profiler, feature
# `torch`, tch 0.26) builds against: torch 2.13.0 from PyPI without its CUDA
# dependencies, plus the two small CUDA wheels libtorch_cpu.so links to.
# Idempotent: does nothing when .tools/libtorch already holds 2.13.0.
# Afterwards: export LIBTORCH="$PWD/.tools/libtorch/torch" (build.rs puts its
# lib/ on the binary's rpath, so no LD_LIBRARY_PATH is needed).
set -euo pipefail
cd "$(dirname "$0")/.."
T=.tools/libtorch
want=2.13.0
if grep -qs "__version__ = '$want" "$T/torch/version.py" \
   && [ -e "$T/torch/lib/libtorch_cpu.so" ] \
   && ls "$T"/nvidia/*/lib/libcudart.so.* "$T"/nvidia/*/lib/libcupti.so.* >/dev/null 2>&1; then
  echo "libtorch $want already in $T"
  exit 0
fi
rm -rf "$T"
mkdir -p "$T"
python3 -m pip install --quiet --no-deps --target "$T" \
  "torch==$want" nvidia-cuda-runtime==13.0.96 nvidia-cuda-cupti==13.0.85
grep -q "__version__ = '$want" "$T/torch/version.py"
echo "libtorch $want installed in $T"
