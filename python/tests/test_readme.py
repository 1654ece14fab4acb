"""The README's two PyTorch examples run as written (a transformers GPT-2
and a torchvision ResNet-18: describe, solve in this process with
`remat_torch.solve`, three training steps), and the steps train as a plain
loop would. scripts/wheel-check.sh runs them again in a clean virtual
environment with only the wheel installed."""

from __future__ import annotations

import os
import re

import pytest
import torch

from helpers import REPO, remat_bin

pytest.importorskip("transformers")
pytest.importorskip("torchvision")


def _examples():
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Training in PyTorch with a schedule"):]
    section = section[: section.index("\n## ", 5)]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_the_readme_has_both_examples():
    blocks = _examples()
    assert len(blocks) == 2
    assert "transformers" in blocks[0] and "torchvision" in blocks[1]


@pytest.mark.parametrize("index", [0, 1], ids=["transformers-gpt2", "torchvision-resnet18"])
def test_readme_example_runs(index, tmp_path, monkeypatch):
    """Run in a scratch directory, with no `remat` binary on the PATH.
    Fails if the example's API is not the package's (mutation tried:
    `loss=` renamed in `checkpointed` — TypeError), if the budget is below
    the chain's floor, or if the plan's first step does not reproduce plain
    training (the loss of the checkpointed step equals the plain step's on
    the same weights, bit for bit)."""
    code = _examples()[index]
    assert "subprocess" not in code and '"remat"' not in code, "the examples solve in-process"
    monkeypatch.chdir(tmp_path)
    here = os.path.dirname(remat_bin())
    monkeypatch.setenv("PATH", os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep) if d != here))
    torch.manual_seed(0)
    first = {}

    # Record the first checkpointed loss and the plain loss before any update.
    import remat_torch

    real = remat_torch.checkpointed

    def recording(model, plan, loss=None, **kw):
        step = real(model, plan, loss=loss, **kw)

        def wrapped(batch, target):
            if "plain" not in first:
                with torch.random.fork_rng():
                    first["plain"] = remat_torch.staging.model_loss(model, loss, batch, target).detach()
                for p in model.parameters():
                    p.grad = None
            value = step(batch, target)
            first.setdefault("step", value)
            return value

        return wrapped

    monkeypatch.setattr(remat_torch, "checkpointed", recording)
    namespace: dict = {}
    exec(compile(code, f"README example {index + 1}", "exec"), namespace)
    assert torch.equal(first["step"], first["plain"].float())
