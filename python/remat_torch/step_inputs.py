"""What a step holds throughout and what its schedule may move: the
model's fixed tensors (parameters, buffers, module attributes), the step
constants, a^0's movable storages (`StepInputs`), and which parameter
gradients a meter books outside the chain's count."""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import torch
from torch import nn

from .batch import device_of
from .records import storage_key


def needs_input_gradient(first: nn.Module, x: torch.Tensor) -> bool:
    """Whether B^1 computes δ^0: when the caller's batch requires grad, or
    when stage 1 has no trainable parameter (its output would not require
    grad otherwise). Else δ^0 is not computed and takes no memory, as in a
    plain step — chains should then say `input_gradient_bytes: 0`."""
    return x.requires_grad or not any(p.requires_grad for p in first.parameters())


def fixed_tensors(program) -> List[torch.Tensor]:
    """Parameters and buffers (the model's, outside the chain's memory) and
    tensors kept as module attributes: never part of ā^ℓ."""
    return [*program.all_parameters(), *program.all_buffers(), *program.attribute_tensors()]


def shared_parameters(program, n: int) -> List[nn.Parameter]:
    """The trainable parameters more than one stage reads."""
    seen: Dict[int, int] = {}
    params: Dict[int, nn.Parameter] = {}
    for l in range(1, n + 1):
        for p in {id(p): p for p in program.parameters(l)}.values():
            if p.requires_grad:
                seen[id(p)] = seen.get(id(p), 0) + 1
                params[id(p)] = p
    return [params[k] for k, c in seen.items() if c > 1]


def booked_outside(program, set_to_none: bool) -> List[nn.Parameter]:
    """The parameters whose gradients a `Meter` books outside the count.
    None with `set_to_none=True`: the chain counts every gradient a backward
    creates (g^ℓ). With False, all but those several stages read (a tied
    embedding): their step's sum is held apart from the later stage's
    backward to the step's end — in autograd's buffer, then the new `.grad`,
    in a plain step; in the `.grad` the runtime sets aside the old one for
    (`Step`) — so the chain counts them as with True (a GPT-2 plan ran
    24 % over its prediction with them booked outside)."""
    if set_to_none:
        return []
    shared = {id(p) for p in shared_parameters(program, len(program))}
    return [p for p in program.all_parameters() if id(p) not in shared]


def foreign_storages(fixed: List[torch.Tensor], consts) -> set:
    """Storages that are never part of ā^ℓ: the `fixed_tensors` (their
    storages read now: an optimizer may have replaced one), the target and
    the step constants."""
    return {storage_key(t.untyped_storage()) for t in [*fixed, *consts] if isinstance(t, torch.Tensor)}


class StepInputs:
    """a^0 and the step constants: which storages of the batch, the target
    and the constants made from them the schedule may move, and which the
    step holds throughout.

    a^0 is what only stage 1 reads: the batch of a list of stages, or the
    step constants that no later stage reads (pixel values, token ids
    read by the embedding). What a later stage reads — the target (the loss
    reads it: with a causal LM's labels that *are* the input ids, the ids
    too), masks, position ids, rotary tables — and anything sharing a
    storage with it, a parameter or a buffer, stays on the device for the
    whole step: an offload of a^0 that emptied it would leave the loss
    reading freed memory (the crash this rule prevents). Those are the step
    constants, outside the chain's memory as parameters are: the chain's
    `input_bytes` is the movable part alone, so a plan that offloads a^0
    frees exactly what it predicted.

    `offset_bytes` turns the allocator's count above the start of a step
    (the caller's batch and target already allocated, the constants made
    inside the step) into the chain's memory: + the movable bytes that were
    there before, − the constant bytes made inside."""

    def __init__(self, program, batch, target, consts: Sequence, fixed: Sequence[torch.Tensor]) -> None:
        from .batch import leaves

        first = program.first_input(batch)
        if first is not None:
            candidates, later = [first], list(consts)
        else:
            after = program.read_after_first()
            candidates = [c for i, c in enumerate(consts) if i not in after]
            later = [c for i, c in enumerate(consts) if i in after]
        keep = {storage_key(t.untyped_storage()) for t in [*later, *fixed] if isinstance(t, torch.Tensor)}
        movable: Dict[int, torch.UntypedStorage] = {}
        device = device_of(batch)
        for t in candidates:
            # Only the device's memory moves: a step constant that lives on
            # the host (a CPU scalar beside a CUDA batch) is not a^0's.
            if isinstance(t, torch.Tensor) and t.device == device and t.untyped_storage().nbytes() > 0:
                key = storage_key(t.untyped_storage())
                if key not in keep:
                    movable.setdefault(key, t.untyped_storage())
        caller = [t for t in [*leaves(batch), target] if isinstance(t, torch.Tensor)]
        pre = {storage_key(t.untyped_storage()): t.untyped_storage().nbytes() for t in caller}
        every: Dict[int, int] = dict(pre)
        for t in consts:
            if isinstance(t, torch.Tensor):
                every.setdefault(storage_key(t.untyped_storage()), t.untyped_storage().nbytes())
        self.movable: List[torch.UntypedStorage] = list(movable.values())
        # The caller's storages among them (allocated before the step).
        self.preexisting = {k for k in movable if k in pre}
        self.input_bytes = sum(st.nbytes() for st in self.movable)
        resident = {k: n for k, n in every.items() if k not in movable}
        self.constant_bytes = sum(resident.values())
        self.offset_bytes = sum(st.nbytes() for k, st in movable.items() if k in pre) - sum(
            n for k, n in resident.items() if k not in pre
        )


def owned(out: torch.Tensor, inp: Optional[torch.Tensor], foreign: set) -> torch.Tensor:
    """The output as a tensor that owns its memory: a stage that returns
    a view of its input or of a parameter (Flatten, Identity) would
    otherwise make a^ℓ and a^{ℓ-1} one storage, which the model counts
    twice and an offload of one would take the other with it."""
    key = storage_key(out.untyped_storage())
    if (inp is not None and key == storage_key(inp.untyped_storage())) or key in foreign:
        return out.clone()
    return out
