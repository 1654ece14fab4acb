"""Shared pieces of the remat_torch tests: the networks, their chain files,
the `remat` binary, and the plain autograd step every schedule is compared
with."""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import torch
from torch import nn

REPO = Path(__file__).resolve().parents[2]


def remat_bin() -> str:
    """The `remat` binary: $REMAT_BIN, else the repository's release build."""
    path = os.environ.get("REMAT_BIN") or str(REPO / "target" / "release" / "remat")
    if not os.path.exists(path):
        raise RuntimeError(
            f"no remat binary at {path}: run `cargo build --release -p remat-cli` "
            "or set REMAT_BIN"
        )
    return path


def remat(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run([remat_bin(), *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"remat {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return p


class Loss(nn.Module):
    """The last stage: the scalar loss from (activation, target)."""

    def forward(self, a: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(a, target)


def mlp() -> Tuple[nn.Sequential, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    net = nn.Sequential(
        nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.Tanh(), nn.Dropout(0.3),
        nn.Linear(64, 48), nn.ReLU(), nn.Dropout(0.2), nn.Linear(48, 10), Loss(),
    )
    x = torch.randn(16, 32)
    target = torch.randint(0, 10, (16,))
    return net, x, target


def cnn() -> Tuple[nn.Sequential, torch.Tensor, torch.Tensor]:
    torch.manual_seed(1)
    net = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Dropout(0.25),
        nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.MaxPool2d(2), nn.Dropout2d(0.2), nn.Flatten(), nn.Linear(16 * 4 * 4, 10), Loss(),
    )
    x = torch.randn(4, 3, 16, 16)
    target = torch.randint(0, 10, (4,))
    return net, x, target


NETWORKS = {"mlp": mlp, "cnn": cnn}


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def chain_for(name: str, net: nn.Sequential, x: torch.Tensor, target: torch.Tensor) -> dict:
    """A remat-chain/1 document for `net`, from the sizes of its tensors in
    one forward: ω_a^ℓ the output, ω_ā^ℓ the output plus what autograd saves
    (parameters and the input left out). Times are made up but distinct, so
    the solvers have real choices to make; the gradient tests do not depend
    on them."""
    stages = list(net)
    params = {t.untyped_storage()._cdata for t in list(net.parameters()) + list(net.buffers())}
    rng = torch.get_rng_state()
    out = []
    a = x
    for l, stage in enumerate(stages, start=1):
        inp = a.detach().requires_grad_(True)
        saved: Dict[int, int] = {}

        def pack(t):
            st = t.untyped_storage()
            if st._cdata not in params and st._cdata != inp.untyped_storage()._cdata:
                saved[st._cdata] = st.nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            y = stage(inp, target) if l == len(stages) else stage(inp)
        ob = _nbytes(y)
        saved.pop(y.untyped_storage()._cdata, None)
        out.append({
            "name": f"{l}:{type(stage).__name__}",
            "forward_seconds": 0.001 * (1 + l % 3),
            "backward_seconds": 0.002 * (1 + l % 2),
            "output_bytes": ob,
            "saved_bytes": ob + sum(saved.values()),
        })
        a = y
    torch.set_rng_state(rng)
    return {
        "format": "remat-chain/1",
        "name": f"{name} ({len(stages)} stages)",
        "source": "remat_torch tests",
        "input_bytes": _nbytes(x),
        "bandwidth_bytes_per_s": 12e9,
        "stages": out,
    }


def plain_step(net: nn.Sequential, x: torch.Tensor, target: torch.Tensor) -> dict:
    """One ordinary autograd step: the reference every schedule must match."""
    stages = list(net)
    a = x
    for stage in stages[:-1]:
        a = stage(a)
    loss = stages[-1](a, target)
    loss.backward()
    return snapshot(net, loss)


def plain_and_counted_twin(name: str, seed: int):
    """One network of NETWORKS, a plain step on it from `seed` (the
    reference), and an untouched copy whose forward calls per stage
    (1-based; index 0 unused) are counted by hooks: (want, twin, x, target,
    counts)."""
    net, x, target = NETWORKS[name]()
    twin = copy.deepcopy(net)
    torch.manual_seed(seed)
    want = plain_step(net, x, target)
    counts = [0] * (len(twin) + 1)
    for l, stage in enumerate(twin, start=1):
        stage.register_forward_hook(lambda m, i, o, l=l: counts.__setitem__(l, counts[l] + 1))
    return want, twin, x, target, counts


def snapshot(net: nn.Module, loss: torch.Tensor) -> dict:
    return {
        "loss": loss.detach().clone().float(),
        "grads": {n: p.grad.detach().clone() for n, p in net.named_parameters()},
        "buffers": {n: b.detach().clone() for n, b in net.named_buffers()},
        "rng": torch.get_rng_state(),
    }


def solve(chain_path: Path, out: Path, *args: str) -> dict:
    """`remat solve CHAIN ARGS -o OUT`, the schedule file and the JSON report."""
    p = remat("solve", str(chain_path), *args, "--json", "-o", str(out))
    report = json.loads(p.stdout)
    return report


def budgets_above_floor(chain_path: Path, percents) -> List[str]:
    """The relative budgets (`"35%"` of M_high) at or above the chain's
    floor: below it `remat solve` refuses the budget (exit 2), no algorithm
    could meet it."""
    p = remat("solve", str(chain_path), "-a", "store-all", "-b", "100%", "--json")
    report = json.loads(p.stdout)
    floor, high = report["floor_bytes"], report["m_high_bytes"]
    return [f"{b}%" for b in percents if int(b * high / 100) > floor]


def simulator_states(chain_path: Path, schedule_path: Path) -> List[dict]:
    """`remat simulate --json --states`'s per-op states."""
    p = remat("simulate", str(chain_path), str(schedule_path), "--json", "--states")
    return json.loads(p.stdout)["states"]


def same_verdict(chain_path: Path, schedule_path: Path, n_stages: int, case: int) -> Optional[List[dict]]:
    """`remat simulate`'s verdict on a schedule file and the wrapper's
    check's, which must agree: both accept, with the same states after each
    op (the validator's are returned), or both refuse with the same message
    (None is returned)."""
    from remat_torch import ScheduleError
    from remat_torch.schedule import load_schedule, validate

    p = remat("simulate", str(chain_path), str(schedule_path), "--json", "--states", check=False)
    try:
        states, mine = validate(load_schedule(schedule_path).ops, n_stages), None
    except ScheduleError as e:
        states, mine = None, str(e)
    if p.returncode == 0:
        assert mine is None, f"case {case}: the simulator accepts, the wrapper says {mine}"
        sim = json.loads(p.stdout)["states"]
        assert states == [{"op": s["op"], "device": s["device"], "host": s["host"]} for s in sim], case
        return states
    assert mine is not None, f"case {case}: the simulator refuses: {p.stderr}"
    want = f"error: {schedule_path}: invalid schedule: {mine}"
    assert p.stderr.strip() == want, (case, p.stderr, mine)
    return None


# --- a tiny transformers GPT-2 (test_menus.py, test_compiled.py) --------------


def tiny_gpt2(dropout: float = 0.1):
    """A 2-layer transformers GPT-2 (64 wide, vocabulary 500, seeded), in
    training mode, its residual and embedding dropouts at `dropout`
    (transformers' default 0.1). attn_pdrop=0: SDPA on the CPU runs its
    fused kernel (`_scaled_dot_product_flash_attention_for_cpu`, what the
    attention policies keep) only without attention dropout; with it, the
    math path (bmm + softmax). Skips the test without transformers."""
    import pytest

    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=500, n_positions=64,
                                  attn_pdrop=0.0, resid_pdrop=dropout, embd_pdrop=dropout,
                                  bos_token_id=0, eos_token_id=0)
    return transformers.GPT2LMHeadModel(cfg).train()


def lm_loss(out, labels):
    """Next-token cross-entropy, the labels being the input ids."""
    logits = out.logits[:, :-1]
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1))


def token_ids(seed: int) -> torch.Tensor:
    """A batch of 2 × 64 ids for `tiny_gpt2`, from its own generator."""
    return torch.randint(0, 500, (2, 64), generator=torch.Generator().manual_seed(seed))


def random_chain(rng, n: int) -> dict:
    """A random remat-chain/1 dict of n stages (sizes in MiB, times in
    ms): for tests that read a chain through the real solver."""
    stages = []
    for l in range(1, n + 1):
        out = rng.randint(1, 40) << 20
        stages.append({
            "name": f"s{l}",
            "forward_seconds": rng.uniform(1e-3, 2e-2),
            "forward_nograd_seconds": rng.uniform(5e-4, 2e-2),
            "backward_seconds": rng.uniform(1e-3, 4e-2),
            "output_bytes": out,
            "saved_bytes": out + (rng.randint(0, 60) << 20),
        })
    return {"format": "remat-chain/1", "name": "random", "input_bytes": 8 << 20, "stages": stages}
