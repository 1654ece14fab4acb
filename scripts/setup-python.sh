#!/usr/bin/env bash
# Makes `import torch` work for the tests of python/ (remat_torch), reusing
# the torch 2.13.0 that scripts/setup-libtorch.sh puts in .tools/libtorch
# (installed there with --no-deps for the profiler). PyPI's Linux torch wheel
# is the CUDA build: libtorch.so links cuBLAS, cuDNN, NCCL, … even on a
# CPU-only machine, so `import torch` needs those libraries. This script
# installs exactly the wheels torch 2.13.0's requirements resolve to (minus
# triton and cuda-bindings, which `import torch` does not need) and torch's
# Python dependencies, plus pytest, into .tools/pydeps, then remat_torch from
# ./python. Use: PYTHONPATH=.tools/libtorch:.tools/pydeps python3 …
#
# Measured on the 2-core build machine (fresh, under load): this ~1 min 50 s
# (2.8 GB); a venv with `pip install torch==2.13.0 pytest` instead took
# ~3 min 35 s (4.7 GB: torch a second time and triton).
# Idempotent: does nothing but reinstall remat_torch (a few seconds) when
# torch imports and pytest is there.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-libtorch.sh
D=.tools/pydeps
export PIP_ROOT_USER_ACTION=ignore
# torch is importable only with both directories on the path (pip itself
# runs without them, or its resolver complains about torch's CUDA pins).
py() { PYTHONPATH="$PWD/.tools/libtorch:$PWD/$D" python3 "$@"; }
if py -c "import torch, pytest, sys; sys.exit(torch.__version__.split('+')[0] != '2.13.0')" \
   >/dev/null 2>&1; then
  echo "torch 2.13.0 imports with $D; pytest there"
else
  rm -rf "$D"
  mkdir -p "$D"
  python3 -m pip install --quiet --no-deps --target "$D" \
    nvidia-cublas==13.1.1.3 nvidia-cuda-nvrtc==13.0.88 nvidia-cudnn-cu13==9.20.0.48 \
    nvidia-cufft==12.0.0.61 nvidia-cufile==1.15.1.6 nvidia-curand==10.4.0.35 \
    nvidia-cusolver==12.0.4.66 nvidia-cusparse==12.6.3.3 nvidia-cusparselt-cu13==0.8.1 \
    nvidia-nccl-cu13==2.29.7 nvidia-nvshmem-cu13==3.4.5 nvidia-nvjitlink==13.5.37 \
    nvidia-nvtx==13.0.85
  python3 -m pip install --quiet --target "$D" \
    filelock 'typing-extensions>=4.10.0' 'sympy>=1.13.3' 'networkx>=2.5.1' jinja2 \
    'fsspec>=0.8.5' 'setuptools>=77.0.3' pytest
  py -c "import torch; assert torch.__version__.startswith('2.13.0'), torch.__version__"
  echo "torch 2.13.0 imports with $D"
fi
# The model libraries the tests describe real networks from (built from
# configs with random weights; nothing is downloaded at test time), pinned:
# torchvision 0.28.0 is the release built against torch 2.13.0. Installed with
# --no-deps (pip would otherwise pull a second torch) and their own Python
# dependencies named. Idempotent: skipped when all three import at these
# versions.
MODELS_OK='import torchvision, transformers, timm, sys; sys.exit(not (torchvision.__version__.startswith("0.28.0") and transformers.__version__ == "5.24.0" and timm.__version__ == "1.0.31"))'
if py -c "$MODELS_OK" >/dev/null 2>&1; then
  echo "torchvision 0.28.0, transformers 5.24.0, timm 1.0.31 import with $D"
else
  python3 -m pip install --quiet --no-deps --upgrade --target "$D" \
    torchvision==0.28.0 transformers==5.24.0 timm==1.0.31
  python3 -m pip install --quiet --upgrade --target "$D" \
    'numpy>=1.17,<3' 'pillow>=5.3.0' 'huggingface-hub>=1.31.0,<2' 'tokenizers>=0.23.1,<0.24' \
    'safetensors>=0.8.0' 'regex>=2025.10.22' 'pyyaml>=5.1' 'packaging>=20.0' 'tqdm>=4.60' typer
  py -c "$MODELS_OK"
  echo "torchvision 0.28.0, transformers 5.24.0, timm 1.0.31 installed in $D"
fi
# pytest-xdist: the suite runs in two processes (scripts/test.sh); most of
# a test's time is Python (dynamo, tracing, one gloo rank waiting on
# another), so two workers on two cores took 5 min 28 s against 11 min.
if py -c "import xdist, execnet" >/dev/null 2>&1; then
  echo "pytest-xdist imports with $D"
else
  python3 -m pip install --quiet --no-deps --target "$D" pytest-xdist==3.8.0 execnet==2.1.2
  py -c "import xdist, execnet"
  echo "pytest-xdist 3.8.0 installed in $D"
fi
# The package itself, as a user installs it (`pip install ./python`), into
# the same directory; --upgrade replaces the previous copy.
python3 -m pip install --quiet --no-deps --upgrade --target "$D" ./python
echo "remat_torch installed in $D from ./python"
