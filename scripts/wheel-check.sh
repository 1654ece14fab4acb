#!/usr/bin/env bash
# remat_torch as a Python user installs it (issue 42, item 3): the wheel
# built by maturin (Remat's solvers compiled in, crates/remat-py), installed
# alone into a clean virtual environment, and the README's two PyTorch
# examples run there with no `remat` binary on the PATH and no PYTHONPATH.
#
# torch, transformers and torchvision are not installed a second time
# (2.8 GB): a .pth file puts the test copies (.tools/libtorch, .tools/pydeps,
# scripts/setup-python.sh) after the environment's own site-packages, so
# remat_torch still comes from the wheel — checked below.
set -euo pipefail
cd "$(dirname "$0")/.."
W="$PWD/target/wheel-check"
rm -rf "$W"
mkdir -p "$W/run"
python3 -m pip wheel --quiet --no-deps -w "$W/dist" ./python
WHEEL=$(ls "$W"/dist/remat_torch-*.whl)
echo "built $(basename "$WHEEL") ($(du -k "$WHEEL" | cut -f1) KiB)"
python3 -m venv "$W/venv"
PY="$W/venv/bin/python"
"$PY" -m pip install --quiet --no-deps "$WHEEL"
SITE=$("$PY" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
# TORCH_DIR (e.g. .tools/torch-2.11, scripts/setup-torch-oldest.sh): that
# torch first, the CUDA runtime libraries from .tools/libtorch last.
if [ -n "${TORCH_DIR:-}" ]; then
  printf '%s\n%s\n%s\n' "$PWD/$TORCH_DIR" "$PWD/.tools/pydeps" "$PWD/.tools/libtorch" > "$SITE/zz-remat-test-dependencies.pth"
else
  printf '%s\n%s\n' "$PWD/.tools/libtorch" "$PWD/.tools/pydeps" > "$SITE/zz-remat-test-dependencies.pth"
fi

cd "$W/run"
env -u PYTHONPATH PATH="$W/venv/bin:/usr/bin:/bin" "$PY" - "$OLDPWD/README.md" "$SITE" <<'EOF'
import re, shutil, sys

readme, site = sys.argv[1], sys.argv[2]
assert shutil.which("remat") is None, f"a remat binary is on the PATH: {shutil.which('remat')}"


class NoNumpy:
    """`import numpy` fails, as where it is not installed (torch does not
    depend on it; remat_torch must not either)."""

    def find_spec(self, name, path=None, target=None):
        if name == "numpy" or name.startswith("numpy."):
            raise ModuleNotFoundError(f"No module named {name!r} (wheel check: no NumPy)")
        return None


# remat_torch and torch import with NumPy absent (a whole recomputing plan
# runs without it: test_never_silent.py); the README's first example needs
# it, as transformers does, so it is put back for the examples.
blocker = NoNumpy()
sys.meta_path.insert(0, blocker)
import remat_torch
assert "numpy" not in sys.modules
sys.meta_path.remove(blocker)

assert remat_torch.__file__.startswith(site), f"remat_torch imported from {remat_torch.__file__}, not the wheel"
text = open(readme).read()
section = text[text.index("## Training in PyTorch with a schedule"):]
section = section[: section.index("\n## ", 5)]
blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
assert len(blocks) == 2, len(blocks)
for i, code in enumerate(blocks, 1):
    namespace = {}
    exec(compile(code, f"README example {i}", "exec"), namespace)
    print(f"README example {i}: {len(namespace['plan']['ops'])} ops, loss {float(namespace['loss']):.4f}")
import torch

print(f"wheel check: remat_torch {remat_torch.__version__} from {site}, solver in-process, no remat on the PATH, "
      f"torch {torch.__version__}, imported with no NumPy")
EOF
