"""Offloading ā^ℓ moves what the stage made, and only that."""

from __future__ import annotations

import copy

import torch
from torch import nn

import remat_torch

from helpers import Loss, plain_step, snapshot


class Scale(nn.Module):
    """Multiplies by a constant kept as a plain attribute (not a buffer),
    shared with another stage: autograd saves it for B^ℓ, but it is not
    part of ā^ℓ."""

    def __init__(self, s: torch.Tensor) -> None:
        super().__init__()
        self.s = s

    def forward(self, a: torch.Tensor) -> torch.Tensor:
        return a * self.s


def _store_all_offloading(L: int, k: int) -> dict:
    """F_all^1 … F_all^L with O(ā^k) once F_all^{k+1} has read it, and
    P(ā^k) before B^{k+1} reads it again."""
    ops = []
    for l in range(1, L + 1):
        ops.append({"op": "forward_all", "stage": l})
        if l == k + 1:
            ops.append({"op": "offload", "stage": k, "tensor": "saved"})
    for l in range(L, 0, -1):
        if l == k + 1:
            ops.append({"op": "prefetch", "stage": k, "tensor": "saved"})
        ops.append({"op": "backward", "stage": l})
    return {"format": "remat-schedule/1", "chain_name": "hand", "algorithm": "hand",
            "budget_bytes": 0, "predicted": {"makespan_seconds": 0, "peak_bytes": 0}, "ops": ops}


def test_offloading_saved_leaves_shared_constants_in_place():
    """Stage 2 and stage 4 multiply by the same constant tensor; autograd
    saves it in both graphs. O(ā^2), after F_all^3, must not take it to the
    host: F_all^4 reads it while ā^2 is away. Fails if ā^ℓ's storages are every saved
    tensor that is not a parameter, buffer, input or target (mutation
    tried: the "born in the stage" filter removed → the constant's storage
    is resized to 0 by O(ā^2) and F_all^4 reads the empty storage: the
    test process dies with a segmentation fault).
    Also checks the states right after O(ā^2): ā^2 only on the host (its
    storages freed), ā^3 — whose ReLU reads ā^2's output — untouched."""
    torch.manual_seed(3)
    shared = torch.randn(64)
    net = nn.Sequential(nn.Linear(32, 64), Scale(shared), nn.ReLU(), Scale(shared),
                        nn.Linear(64, 10), Loss())
    x, target = torch.randn(8, 32), torch.randint(0, 10, (8,))
    twin = copy.deepcopy(net)
    twin[3].s = twin[1].s  # deepcopy copies the shared tensor once per module; share it again
    want = plain_step(net, x, target)
    step = remat_torch.checkpointed(twin, _store_all_offloading(len(net), 2))
    got = snapshot(twin, step(x, target))
    assert torch.equal(got["loss"], want["loss"])
    for p in want["grads"]:
        assert torch.equal(got["grads"][p], want["grads"][p]), p
    assert twin[1].s.untyped_storage().nbytes() == 64 * 4
    after_offload = step.last_states[3]
    assert after_offload == {"op": 3, "device": ["a^0", "ā^1", "ā^3", "δ^6"], "host": ["ā^2"]}, after_offload
