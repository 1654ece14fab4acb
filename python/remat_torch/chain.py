"""A `remat-chain/1` description of a list of stages, measured in Python.

Sizes come from the tensors themselves — ω_a^ℓ the output's storage, ω_ā^ℓ
the output plus the storages autograd saves for B^ℓ (seen through
`saved_tensors_hooks`; parameters, buffers, the input and the target left
out), which is exactly what `remat_torch.checkpointed` keeps and moves as
a^ℓ and ā^ℓ. Times are wall-clock medians. Transient workspaces (o_f, o_b)
are not measured: `remat-profile` (docs/profiler.md) measures those with a
counting allocator for its built-in models; here they are left at 0.
The forward times include the bookkeeping of which storages a stage creates
(a Python call per aten op), as the runtime's F_all does.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Dict, List, Optional, Sequence

import torch
from torch import nn

from .runtime import _Births, needs_input_gradient


def _storage_bytes(t: torch.Tensor) -> int:
    return t.untyped_storage().nbytes()


def _sync(x: torch.Tensor) -> None:
    if x.is_cuda:
        torch.cuda.synchronize(x.device)


def describe_chain(
    stages: Sequence[nn.Module],
    x: torch.Tensor,
    target: Any = None,
    name: str = "remat_torch chain",
    repeat: int = 3,
    bandwidth_bytes_per_s: Optional[float] = None,
) -> Dict[str, Any]:
    """The chain of `stages` on the batch `x` as a `remat-chain/1` dict
    (write it with `json.dump` and give it to `remat solve`).

    Runs `repeat` forward+backward passes per stage (parameter `.grad` is
    left as it was, the RNG state and buffers too), so the timings include
    warm caches; the first pass is not timed.
    """
    stages = list(stages)
    foreign = {t.untyped_storage()._cdata for m in stages for t in [*m.parameters(), *m.buffers()]}
    if isinstance(target, torch.Tensor):
        foreign.add(target.untyped_storage()._cdata)
    grads = {p: (None if p.grad is None else p.grad.clone()) for m in stages for p in m.parameters()}
    buffers = [(b, b.detach().clone()) for m in stages for b in m.buffers()]
    rng = torch.get_rng_state()
    cuda_rng = torch.cuda.get_rng_state(x.device) if x.is_cuda else None
    out: List[Dict[str, Any]] = []
    a = x.detach()
    try:
        for l, stage in enumerate(stages, start=1):
            last = l == len(stages)
            fw: List[float] = []
            bw: List[float] = []
            saved_bytes = 0
            y = None
            for k in range(repeat + 1):
                inp = a.detach().requires_grad_(l > 1 or needs_input_gradient(stages[0], x))
                seen: Dict[int, int] = {}
                key_in = inp.untyped_storage()._cdata

                def pack(t: torch.Tensor):
                    st = t.untyped_storage()
                    if st._cdata != key_in and st._cdata not in foreign:
                        seen[st._cdata] = st.nbytes()
                    return t.detach()

                births = _Births()
                _sync(x)
                t0 = time.perf_counter()
                with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), births:
                    y = stage(inp, target) if last else stage(inp)
                _sync(x)
                t1 = time.perf_counter()
                # What the runtime counts in ā^ℓ: storages born in the stage.
                seen = {k: v for k, v in seen.items() if k in births.keys}
                torch.autograd.backward(y, torch.ones_like(y))
                _sync(x)
                t2 = time.perf_counter()
                if k > 0:
                    fw.append(t1 - t0)
                    bw.append(t2 - t1)
                seen.pop(y.untyped_storage()._cdata, None)
                saved_bytes = sum(seen.values())
            assert y is not None
            # numel × size, not the storage: an output that views its input
            # (Flatten) is copied by the runtime into a tensor of its own.
            output_bytes = y.numel() * y.element_size()
            out.append({
                "name": f"{l}:{type(stage).__name__}",
                "forward_seconds": statistics.median(fw) if fw else 0.0,
                "backward_seconds": statistics.median(bw) if bw else 0.0,
                "output_bytes": output_bytes,
                "saved_bytes": output_bytes + saved_bytes,
            })
            with torch.no_grad():
                a = stage(a, target) if last else stage(a)
    finally:
        for p, g in grads.items():
            p.grad = g
        with torch.no_grad():
            for b, old in buffers:
                b.copy_(old)
        torch.set_rng_state(rng)
        if cuda_rng is not None:
            torch.cuda.set_rng_state(cuda_rng, x.device)
    chain: Dict[str, Any] = {
        "format": "remat-chain/1",
        "name": name,
        "source": f"remat_torch.describe_chain on {x.device} (torch {torch.__version__}); "
        "sizes are tensor storages, no workspaces",
        "input_bytes": _storage_bytes(x),
        "input_gradient_bytes": _storage_bytes(x) if needs_input_gradient(stages[0], x) else 0,
        "stages": out,
    }
    if bandwidth_bytes_per_s is not None:
        chain["bandwidth_bytes_per_s"] = bandwidth_bytes_per_s
    return chain
