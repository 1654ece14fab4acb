"""The named selective-checkpointing policies a stage's menu offers.

A chain's stage may carry a `menu` (docs/formats.md): other ways to run
F_all^ℓ that keep less than ā^ℓ for B^ℓ and recompute the rest inside B^ℓ.
Each entry names a policy; this module defines the policies `remat_torch`
measures (`describe_chain(..., menu=True)`) and runs (`checkpointed`, for an
F_all with `"option": k`; `apply_plan`, for an export's `policies`):

* `save_mm_attention`: keep the outputs of the matrix products (aten.mm,
  addmm, bmm, baddbmm — what `nn.Linear` and transformers' `Conv1D` lower
  to) and of the fused scaled-dot-product-attention kernels; recompute
  everything else (norms, activations, dropout, residual adds):
  torchtitan's per-op save list, without its every-other-mm filter.
* `save_every_other_mm`: the same, but only the 1st, 3rd, 5th … matrix
  product of a forward is kept (attention outputs always): torchtitan's
  default "op" selective checkpointing, which halves what the matmuls keep.
* `save_attention`: keep only the attention kernels' outputs (the costly
  part of a long sequence), recompute the matmuls too.
* `save_nothing`: keep nothing inside the stage: plain non-reentrant
  `torch.utils.checkpoint`, B^ℓ recomputes the whole stage from its input.

Every policy runs the stage under `torch.utils.checkpoint.checkpoint(...,
use_reentrant=False)`, with `create_selective_checkpoint_contexts` for the
first three. The input of the stage is not part of what an option keeps
(the input stays resident until B^ℓ, as for the classic F_all); the output
a^ℓ always is.

RNG and buffers are handled here rather than by `checkpoint`, the way the
runtime handles a recomputed forward (`step.Step.replay`): the RNG state
of the forward is kept as Python bytes (host memory, outside the count a
GPU's or the CPU allocator's measurement makes; `checkpoint`'s own
`preserve_rng_state` keeps a 5 KiB tensor from the CPU allocator per
stage), set for the recomputation inside B^ℓ and put back after it, so
dropout draws the same mask and the global stream continues as after a
plain step; buffers a stage updates in place (BatchNorm's running
statistics) are snapshotted before the recomputation and put back after
it, so they receive the one update of the forward.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

from . import rng
from .host import host_copy

# In the order `describe_chain(menu=True)` measures them and writes them.
POLICIES: Tuple[str, ...] = ("save_mm_attention", "save_every_other_mm", "save_attention", "save_nothing")


def _aten_ops(*names: str) -> frozenset:
    """The `.default` overloads of the named aten operators that this
    PyTorch build has (the attention kernels differ between versions and
    builds: cuDNN's, the CPU flash kernel's)."""
    found = []
    for name in names:
        try:
            found.append(getattr(torch.ops.aten, name).default)
        except (AttributeError, RuntimeError):
            continue
    return frozenset(found)


# What a selective-checkpointing dispatch mode sees: the operators below
# autograd, after composite ones (aten.linear, aten.matmul,
# aten.scaled_dot_product_attention) have been decomposed into these.
MATMULS = _aten_ops("mm", "addmm", "bmm", "baddbmm")
ATTENTION = _aten_ops(
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention",
    "_scaled_dot_product_fused_attention_overrideable",
    # Composite in current PyTorch (decomposed before a dispatch mode sees
    # it: an attention with dropout on the CPU runs as bmm + softmax), but
    # listed by torchtitan in case a build dispatches it as one.
    "_scaled_dot_product_attention_math",
)


def _keeping(kept: frozenset) -> Callable:
    """A policy that keeps the outputs of `kept` and recomputes the rest."""

    def policy(ctx, op, *args, **kwargs) -> CheckpointPolicy:
        return CheckpointPolicy.MUST_SAVE if op in kept else CheckpointPolicy.PREFER_RECOMPUTE

    return policy


def _every_other_mm() -> Callable:
    """Keeps attention outputs and the odd-numbered matrix products of one
    forward. The count must restart with each forward and be kept apart for
    the recomputation: a recomputation that kept counting from the forward
    would pick other products to serve from the cache than the forward
    saved. This PyTorch calls the policy in the forward only and replays by
    position; older ones call it again with `ctx.is_recompute` set, hence
    one counter per pass, made fresh for each forward (`policy_for` is
    called once per `checkpoint` call)."""
    counts: Dict[bool, int] = {False: 0, True: 0}

    def policy(ctx, op, *args, **kwargs) -> CheckpointPolicy:
        if op in ATTENTION:
            return CheckpointPolicy.MUST_SAVE
        if op in MATMULS:
            again = bool(getattr(ctx, "is_recompute", False))
            counts[again] += 1
            if counts[again] % 2 == 1:
                return CheckpointPolicy.MUST_SAVE
        return CheckpointPolicy.PREFER_RECOMPUTE

    return policy


def policy_for(name: str) -> Optional[Callable]:
    """A fresh policy function for `name`, or None for `save_nothing`
    (plain checkpointing, no dispatch mode)."""
    if name == "save_mm_attention":
        return _keeping(MATMULS | ATTENTION)
    if name == "save_every_other_mm":
        return _every_other_mm()
    if name == "save_attention":
        return _keeping(ATTENTION)
    if name == "save_nothing":
        return None
    raise ValueError(f"unknown policy {name!r}; remat_torch runs {', '.join(POLICIES)}")


def check_policies(names: Sequence[str], field: str, compiled: bool = False) -> List[str]:
    """`names` as a list of known, distinct policy names; a ValueError
    naming `field` otherwise. Over compiled stages (`compiled`) the policies
    are the partitioner's budgets, `activation_memory_budget=b`
    (`remat_torch.compiled`); eager, the selective-checkpointing ones."""
    from .compiled import budget_of, policy_name

    out: List[str] = []
    for i, name in enumerate(names):
        try:
            budget = budget_of(name)
        except ValueError as e:
            raise ValueError(f"{field}[{i}]: {e}") from None
        if compiled and budget is None:
            raise ValueError(
                f"{field}[{i}]: {name!r} is a selective-checkpointing policy, which runs eager ops; over "
                f"compiled stages the menu offers the partitioner's budgets ({policy_name(0.4)}, …)"
            )
        if not compiled and budget is not None:
            raise ValueError(f"{field}[{i}]: {name!r} needs compiled stages: pass compile=True")
        if budget is None and name not in POLICIES:
            raise ValueError(f"{field}[{i}]: unknown policy {name!r}; remat_torch runs {', '.join(POLICIES)}"
                             f" and, over compiled stages, {policy_name(0.4)} (any budget in [0, 1])")
        if name in out:
            raise ValueError(f"{field}[{i}]: {name!r} is listed twice")
        out.append(name)
    return out


class _Recomputation:
    """The RNG state of a forward kept as bytes, and a recomputation that
    runs from it and leaves no trace (module docstring). `outside` books
    the instants an RNG state passes through the CPU allocator outside a
    measurement (`Meter.outside`; a no-op context when not measuring)."""

    def __init__(self, device: torch.device, buffers: Sequence[torch.Tensor], outside: Callable) -> None:
        self.device = device
        self.buffers = list(buffers)
        self.outside = outside
        self.cpu: Optional[bytes] = None
        self.cuda: Optional[bytes] = None

    def _states(self) -> Tuple[bytes, Optional[bytes]]:
        return rng.current(self.device)

    def _set(self, cpu: bytes, cuda: Optional[bytes]) -> None:
        rng.restore(cpu, cuda, self.device)

    @contextlib.contextmanager
    def forward(self):
        with self.outside():
            self.cpu, self.cuda = self._states()
        yield

    @contextlib.contextmanager
    def again(self):
        # Host copies, outside the device's count (on the CPU a pool outside
        # PyTorch's allocator), as `replay` keeps them.
        kept = [(b, host_copy(b)) for b in self.buffers]
        with self.outside():
            now = self._states()
            self._set(self.cpu, self.cuda)
        try:
            yield
        finally:
            with self.outside():
                self._set(*now)
            # Through `.data`: a write autograd's version counter does not
            # see (the graph saved these buffers; putting back their value
            # is no change it must refuse).
            with torch.no_grad():
                for b, old in kept:
                    b.data.copy_(old)


def _context_fn(name: str, device: torch.device, buffers: Sequence[torch.Tensor], outside: Callable):
    """`checkpoint`'s `context_fn` for `name`: called once per forward, it
    makes the policy (fresh counters) and the (forward, recomputation)
    contexts, each the RNG/buffer handling around the selective mode."""

    def make():
        state = _Recomputation(device, buffers, outside)
        policy = policy_for(name)
        if policy is None:
            caching, cached = contextlib.nullcontext(), contextlib.nullcontext()
        else:
            caching, cached = create_selective_checkpoint_contexts(policy)
        return _both(state.forward(), caching), _both(state.again(), cached)

    return make


@contextlib.contextmanager
def _both(outer, inner):
    with outer, inner:
        yield


def run_option(name: str, fn: Callable[..., Any], args: Sequence[Any], *, device: torch.device,
               buffers: Sequence[torch.Tensor] = (), outside: Callable = contextlib.nullcontext,
               kwargs: Optional[Dict[str, Any]] = None) -> Any:
    """`fn(*args, **kwargs)` recorded under policy `name`: what autograd
    would save is kept only where the policy says, the rest recomputed when
    B^ℓ first needs it. Call with grad enabled. `buffers` are the stage's
    buffers (put back after the recomputation), `outside` the measurement's
    `Meter.outside` or a no-op."""
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name!r}; remat_torch runs {', '.join(POLICIES)}")
    return checkpoint(
        fn, *args, use_reentrant=False, preserve_rng_state=False,
        context_fn=_context_fn(name, torch.device(device), buffers, outside), **(kwargs or {}),
    )
