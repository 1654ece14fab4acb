#!/usr/bin/env bash
# The oldest torch remat_torch supports (issue 42, item 4: "2.11 to the
# newest"), for its tests at that end of the range: torch 2.11.0 and the
# torchvision built for it (0.26.0), installed with --no-deps into
# .tools/torch-2.11. Everything else comes from scripts/setup-python.sh's
# .tools/pydeps (transformers, timm, pytest, the CUDA libraries' Python
# wheels) and .tools/libtorch (libcudart, which `import torch` loads even on
# a machine without a GPU): put this directory first on the path,
#   PYTHONPATH=.tools/torch-2.11:.tools/pydeps:.tools/libtorch
# 2.11's CUDA pins are 2.13's but for minor versions (cuDNN 9.19 vs 9.20,
# NCCL 2.28 vs 2.29: the same sonames), so no second set of CUDA wheels.
# About 560 MB downloaded, 25 s here. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
D=.tools/torch-2.11
if PYTHONPATH="$PWD/$D:$PWD/.tools/pydeps:$PWD/.tools/libtorch" python3 -c \
    "import torch, torchvision, sys; sys.exit(torch.__version__.split('+')[0] != '2.11.0')" 2>/dev/null; then
  echo "torch 2.11.0 imports from $D"
  exit 0
fi
rm -rf "$D"
python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$D" \
  "torch==2.11.0" "torchvision==0.26.0"
PYTHONPATH="$PWD/$D:$PWD/.tools/pydeps:$PWD/.tools/libtorch" python3 -c \
  "import torch, torchvision; print('torch', torch.__version__, 'torchvision', torchvision.__version__, 'in $D')"
