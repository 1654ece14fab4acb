#!/usr/bin/env bash
# Makes `import torch` work for the tests of python/ (remat_torch): a virtual
# environment in .tools/pyenv with torch 2.13.0 from PyPI (its Linux wheel is
# the CUDA build: it pulls ~3.4 GB of CUDA libraries, which import torch
# needs even on a CPU-only machine) and pytest, then `pip install ./python`.
# Idempotent: the venv is reused when it already has torch 2.13.0 and
# pytest; the package is reinstalled each time (a few seconds) so the venv
# runs the working tree's remat_torch.
# Afterwards: .tools/pyenv/bin/python -m pytest python/tests
set -euo pipefail
cd "$(dirname "$0")/.."
V=.tools/pyenv
want=2.13.0
if "$V/bin/python" -c "import torch, pytest, sys; sys.exit(torch.__version__.split('+')[0] != '$want')" \
   >/dev/null 2>&1; then
  echo "torch $want and pytest already in $V"
else
  rm -rf "$V"
  python3 -m venv "$V"
  "$V/bin/pip" install --quiet "torch==$want" pytest
  "$V/bin/python" -c "import torch; assert torch.__version__.startswith('$want'), torch.__version__"
  echo "torch $want and pytest installed in $V"
fi
# Without build isolation: setuptools came with torch, and the build then
# needs nothing from the network.
"$V/bin/pip" install --quiet --no-build-isolation --force-reinstall --no-deps ./python
echo "remat_torch installed in $V from ./python"
