"""What FSDP2 (`fully_shard`) holds in a step beyond the chain, measured.

A chain counts activations; a step sharded with `fully_shard` also holds,
for a while, the parameters of the blocks it has gathered (all-gather
before a block's forward, again before its backward, and once more when a
plan recomputes it) and the unsharded gradients of a block before their
reduce-scatter. How many blocks are gathered at once depends on the
prefetching (docs/pytorch.md, "FSDP2", has the numbers measured here), so
it is measured, not assumed:

    reserve = remat_torch.fsdp_reserve(sharded, loss_fn, small_batch, small_target, m_high)
    budget = remat_torch.fsdp_budget(80 << 30, sharded, reserve)   # activations, per rank

`m_high` is the chain's M_high at `small_batch` (`remat solve CHAIN -a
store-all -b 100% --json`'s `peak_bytes`, the chain described on the
unsharded model). What FSDP2 adds does not grow with the batch, so a small
batch that fits measures it for the real one.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch import nn

from .batch import device_of
from .measure import Meter


def _local_bytes(p: torch.Tensor) -> int:
    """A parameter's bytes on this rank: its shard under FSDP2."""
    local = p.to_local() if hasattr(p, "to_local") else p
    return local.numel() * local.element_size()


def _blocks(model: nn.Module):
    """The modules `fully_shard` was applied to, the root aside."""
    return [m for m in model.modules() if m is not model and type(m).__name__.startswith("FSDP")]


def fsdp_reserve(model: nn.Module, loss: Callable, batch: Any, target: Any, m_high_bytes: int,
                 steps: int = 3) -> int:
    """Bytes a plain step of `model` (already `fully_shard`ed) holds beyond
    the chain's M_high (`m_high_bytes`, at this batch): the highest peak of
    `steps` forward-backward passes, measured like every peak in Remat (the
    allocator's count, parameter gradients outside), less M_high. The
    passes' gradients are dropped (`zero_grad(set_to_none=True)`); no
    optimizer step runs."""
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps: expected a whole number ≥ 1, got {steps!r}")
    meter = Meter(device_of(batch), list(model.parameters()))
    peaks = []
    for _ in range(steps):
        def step():
            out = model(**batch) if isinstance(batch, dict) else model(batch)
            loss(out, target).backward()

        _, _, peak = meter.measure(step)
        peaks.append(peak)
        model.zero_grad(set_to_none=True)
    return max(peaks) - m_high_bytes


def fsdp_budget(device_memory: int, model: nn.Module, reserve: int, *, optimizer_states: int = 2,
                recompute_blocks: int = 2, margin: float = 0.01) -> int:
    """The activation budget of one rank: `device_memory` less the rank's
    shards (weights, their gradients and `optimizer_states` tensors per
    weight, Adam: 2), the measured `reserve` (`fsdp_reserve`),
    `recompute_blocks` more gathered blocks for a plan that recomputes (a
    recomputed block is gathered again while the next one is prefetched;
    2 by default, as a step's reading on the CPU under gloo can hold up to
    two whole blocks more than the same step's lowest (docs/pytorch.md,
    "FSDP2"); 0 for a plan that recomputes nothing) and `margin` of the
    device."""
    shards = sum(_local_bytes(p) for p in model.parameters())
    block = max((sum(_local_bytes(p) for p in b.parameters()) for b in _blocks(model)), default=0)
    # A block gathered holds every rank's shard of it.
    world = torch.distributed.get_world_size() if torch.distributed.is_initialized() else 1
    left = (device_memory - (2 + optimizer_states) * shards - reserve - recompute_blocks * block * world
            - int(device_memory * margin))
    if left <= 0:
        raise ValueError(f"device_memory: the shards ({(2 + optimizer_states) * shards} B), FSDP2's reserve "
                         f"({reserve} B) and the margin leave nothing for activations")
    return left
