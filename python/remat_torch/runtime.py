"""Runs one training step of a chain of modules following a Remat schedule.

Each logical tensor of docs/model.md is one record here:

* a^ℓ — `_Activation`: a plain tensor with no autograd history (the output of
  F_ck^ℓ / F_∅^ℓ, or the input batch a^0);
* ā^ℓ — `_Saved`: what F_all^ℓ leaves for B^ℓ: the stage's output a^ℓ with
  its autograd graph, the detached alias of the input the graph stops at,
  and the storages of the tensors autograd saved for the backward (found with
  `torch.autograd.graph.saved_tensors_hooks`; parameters, buffers, the
  stage's input and the target are not part of ā^ℓ);
* δ^ℓ — a plain gradient tensor (δ^L, the loss seed, is a 1 made in B^L).

Where a record is (device, host) is read from the tensors themselves — a
device copy is there when its storages are allocated, a host copy when the
record holds host buffers — so `last_states` reports what the wrapper really
holds, not what it meant to do. A release (R) forgets a record: its storages
are resized to 0 and a host copy dropped.

An F_all with a menu option (`"option": k`, a policy named in the chain's
menu) runs the stage under that selective checkpoint
(`remat_torch.policies`): ā^ℓ is then the output and what the checkpoint
keeps, and B^ℓ recomputes the rest.

The input of stage ℓ is not part of ā^ℓ: B^ℓ back-propagates through the
graph of F_all^ℓ reading whichever input is on the device when it runs
(`_StageInput`), as the simulator's B^ℓ does, so the one F_all^ℓ ran on may
have been released or offloaded and recomputed in between.
"""

from __future__ import annotations

import contextlib
import os
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import torch
from torch import nn

from . import rng
from .batch import device_of
from .compiled import budget_of, compile_budget, compiled_program
from .host import host_buffer, host_copy
from .policies import check_policies, run_option
from .schedule import (FORWARDS, Op, Schedule, ScheduleError, ScheduleLike, check, joined_forwards, load_schedule,
                       taken_apart_by, tracked_forwards)


def _storage_key(st: torch.UntypedStorage) -> int:
    # One StorageImpl may be seen through many Python storage objects;
    # `_cdata` is its address, stable while the storage lives.
    return st._cdata


class _Moved:
    """Storages that move to the host and back as one tensor of the model.

    Offload copies every storage to a host buffer, then frees the device
    memory with `untyped_storage().resize_(0)`; prefetch re-allocates it
    with `resize_(nbytes)` and copies back. This is the trick FSDP uses for
    its flat parameters, chosen over pack/unpack holders because every
    tensor that views the storage — the autograd graph's saved tensors, the
    output the next stage's input aliases, views inside the graph — sees the
    data leave and come back in place: the device memory is really freed
    even though the graph still references those tensors, and nothing needs
    re-binding on the way back. A holder in a pack hook could only drop its
    own reference, and the graph or the next stage would keep the memory.
    """

    def __init__(self, storages: Iterable[torch.UntypedStorage]) -> None:
        seen: Dict[int, torch.UntypedStorage] = {}
        for st in storages:
            if st.nbytes() > 0:
                seen.setdefault(_storage_key(st), st)
        self.storages: List[torch.UntypedStorage] = list(seen.values())
        self.sizes: List[int] = [st.nbytes() for st in self.storages]
        self.host: Optional[List[torch.Tensor]] = None
        # CUDA: the event after which the device copy can be read again.
        self.ready: Optional[torch.cuda.Event] = None

    def on_device(self) -> bool:
        return all(st.nbytes() == n for st, n in zip(self.storages, self.sizes))

    def on_host(self) -> bool:
        return self.host is not None

    @staticmethod
    def _bytes(st: torch.UntypedStorage) -> torch.Tensor:
        return torch.empty(0, dtype=torch.uint8, device=st.device).set_(st)

    def offload(self, copy_stream: Optional["torch.cuda.Stream"]) -> None:
        if copy_stream is not None:
            # The copy starts once the producer (compute issued so far) ends.
            copy_stream.wait_stream(torch.cuda.current_stream())
        self.host = []
        for st, n in zip(self.storages, self.sizes):
            dev = self._bytes(st)
            if copy_stream is None:
                host = host_buffer(n)
                host.copy_(dev)
            else:
                host = torch.empty(n, dtype=torch.uint8, pin_memory=True)
                with torch.cuda.stream(copy_stream):
                    host.copy_(dev, non_blocking=True)
                # The caching allocator must not hand the block to the compute
                # stream before the copy has read it: the memory is freed
                # "when the copy ends", as in the simulator.
                dev.record_stream(copy_stream)
            self.host.append(host)
            del dev
            st.resize_(0)

    def prefetch(self, copy_stream: Optional["torch.cuda.Stream"]) -> None:
        assert self.host is not None
        for st, n, host in zip(self.storages, self.sizes, self.host):
            # Allocated on the compute stream at issue time: the simulator
            # takes the memory when the transfer starts.
            st.resize_(n)
            dev = self._bytes(st)
            if copy_stream is None:
                dev.copy_(host)
            else:
                # Issued after the compute operation listed before it (and
                # after this allocation, made on the compute stream).
                copy_stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(copy_stream):
                    dev.copy_(host, non_blocking=True)
                dev.record_stream(copy_stream)
        if copy_stream is not None:
            self.ready = torch.cuda.Event()
            self.ready.record(copy_stream)
        self.host = None

    def release(self) -> None:
        """R: forget the tensor. A device copy's storages are resized to 0,
        as an offload does but with no copy: the memory is freed although
        the next stage's input alias still views it (the graph of that
        stage reads its input through `_StageInput`, not through this
        storage). On CUDA the compute stream frees it after the operations
        issued so far — the simulator's "at the end of the compute operation
        listed before it" — and a prefetch still copying into it marked the
        block used by the copy stream, so it is reused only once that copy
        ends. A host copy is dropped."""
        for st in self.storages:
            st.resize_(0)
        self.host = None
        self.ready = None

    def wait(self) -> None:
        """Make the compute stream wait for a prefetch still in flight."""
        if self.ready is not None:
            torch.cuda.current_stream().wait_event(self.ready)
            self.ready = None


class _Activation:
    """a^ℓ: a plain tensor; `checkpoint` is set by F_ck^{ℓ+1}."""

    def __init__(self, value: Optional[torch.Tensor]) -> None:
        # None for a^0 of a model whose stages were found: stage 1 reads
        # the step constants, which the step holds (`_Step.consts`).
        self.value = value
        self.checkpoint = False
        self.moved = _Moved([] if value is None else [value.untyped_storage()])

    def tensor(self) -> torch.Tensor:
        return self.value


def _layout(t: torch.Tensor) -> Tuple:
    return (tuple(t.size()), t.stride(), t.storage_offset(), t.dtype, t.untyped_storage().nbytes())


class _StageInput:
    """The input of stage ℓ as its graph reads it at B^ℓ.

    The model's ā^ℓ does not contain the input: B^ℓ reads whichever of
    a^{ℓ-1}, ā^{ℓ-1} is on the device then, and a schedule may have
    released (or offloaded) the tensor F_all^ℓ ran on and recomputed it
    since — DTR and DELTA release ā^{ℓ-1} and recompute a^{ℓ-1} before B^ℓ.
    So the tensors autograd saves from the input's storage are not kept as
    tensors (they would keep the released memory alive, or read a storage
    resized to 0): they are kept as `_InputView`s, and B^ℓ binds `now` to
    the input that is resident when it runs. A recomputation runs the same
    kernels on the same values, so the bytes are the same."""

    def __init__(self, alias: torch.Tensor) -> None:
        self.key = _storage_key(alias.untyped_storage())
        self.layout = _layout(alias)
        self.now: Optional[torch.Tensor] = None

    def bind(self, l: int, current: torch.Tensor) -> None:
        if _layout(current) != self.layout:
            # Never seen: F_ck/F_∅ and F_all of one stage give one layout.
            raise RuntimeError(
                f"B^{l}: the input resident now has another memory layout than the one "
                f"F_all^{l} ran on ({_layout(current)} ≠ {self.layout})"
            )
        self.now = current


class _InputView:
    """A tensor autograd saved that lies in the stage's input storage
    (the input itself, or a view of it): its place in that storage, read
    from the input bound at B^ℓ."""

    __slots__ = ("source", "dtype", "offset", "size", "stride")

    def __init__(self, source: _StageInput, t: torch.Tensor) -> None:
        self.source = source
        self.dtype, self.offset, self.size, self.stride = t.dtype, t.storage_offset(), t.size(), t.stride()

    def tensor(self) -> torch.Tensor:
        now = self.source.now
        assert now is not None, "an input view was unpacked outside B^ℓ"
        out = torch.empty(0, dtype=self.dtype, device=now.device)
        return out.set_(now.untyped_storage(), self.offset, self.size, self.stride)


class Entry(torch.autograd.Function):
    """The input of a recording forward: a view of the stage's input whose
    gradient is handed to the caller as autograd computed it. A leaf with
    `requires_grad` would do the same through `.grad`, but AccumulateGrad
    re-lays a gradient out to the leaf's strides (the "layout contract"), an
    extra copy that changes the kernels the previous stage's backward runs
    (timm's ConvNeXt then differs from a plain step in the last bits).
    `anchor` is a 0-d tensor that requires grad, so the view records a graph
    even when nothing before it does; it receives no gradient."""

    @staticmethod
    def forward(ctx, inp: torch.Tensor, anchor: torch.Tensor, box: list) -> torch.Tensor:
        ctx.box = box
        return inp.view_as(inp)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        ctx.box.append(grad)
        ctx.box = None
        return None, None, None


class _Seed(torch.autograd.Function):
    """Starts B^ℓ with δ^ℓ handed over: the runtime keeps no reference to it,
    so autograd frees it after its last reader, as in a plain step (a
    tensor passed to `torch.autograd.backward` stays referenced by the
    caller's frame until the call returns)."""

    @staticmethod
    def forward(ctx, out: torch.Tensor, box: list) -> torch.Tensor:
        ctx.box = box
        return out.new_zeros(())

    @staticmethod
    def backward(ctx, _grad: torch.Tensor):
        delta = ctx.box.pop()
        ctx.box = None
        return delta, None


def backward_handing_over(out_box: list, delta_box: list) -> None:
    """B^ℓ as autograd runs it in a plain step: `out_box` holds the stage's
    output (the only reference the caller keeps), `delta_box` δ^ℓ (empty for
    the loss, whose seed is autograd's implicit 1). Both are emptied before
    the engine runs, so the output and δ^ℓ are freed as soon as their last
    reader has run."""
    out = out_box.pop()
    if not delta_box:
        # The loss: autograd seeds it with 1 (a 4-byte tensor it makes).
        torch.autograd.backward(out)
        return
    seed = _Seed.apply(out, delta_box)
    del out
    torch.autograd.backward(seed)


class _Saved:
    """ā^ℓ: the stage output with its graph, the input alias it stops at,
    and the storages of the graph's saved tensors (plus the output's)."""

    def __init__(self, out: torch.Tensor, alias: Optional[torch.Tensor], storages: List[torch.UntypedStorage],
                 stage_input: Optional[_StageInput], grad_box: list) -> None:
        self.out = out
        self.alias = alias
        self.stage_input = stage_input
        # δ^{ℓ-1} lands here when B^ℓ runs (`Entry`).
        self.grad_box = grad_box
        self.moved = _Moved([out.untyped_storage(), *storages])
        # Not taken apart: its graph may be joined by stage ℓ+1's.
        self.whole = stage_input is None
        # Its graph continues into ā^{ℓ-1}'s (one engine call for both).
        self.joined = False
        # The parameters several stages read that the stages of its engine
        # call read (this one's and those it is joined to): a stage reading
        # one of them again does not join (`_Step.forward`).
        self.run_shared: frozenset = frozenset()
        # Already back-propagated by the engine call of a later stage's B.
        self.done = False
        self.d_prev: Optional[torch.Tensor] = None

    def tensor(self) -> torch.Tensor:
        return self.out


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
    (`_Step`) — so the chain counts them as with True (a GPT-2 plan ran
    24 % over its prediction with them booked outside)."""
    if set_to_none:
        return []
    shared = {id(p) for p in shared_parameters(program, len(program))}
    return [p for p in program.all_parameters() if id(p) not in shared]


def foreign_storages(fixed: List[torch.Tensor], consts) -> set:
    """Storages that are never part of ā^ℓ: the `fixed_tensors` (their
    storages read now: an optimizer may have replaced one), the target and
    the step constants."""
    return {_storage_key(t.untyped_storage()) for t in [*fixed, *consts] if isinstance(t, torch.Tensor)}


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
        keep = {_storage_key(t.untyped_storage()) for t in [*later, *fixed] if isinstance(t, torch.Tensor)}
        movable: Dict[int, torch.UntypedStorage] = {}
        device = device_of(batch)
        for t in candidates:
            # Only the device's memory moves: a step constant that lives on
            # the host (a CPU scalar beside a CUDA batch) is not a^0's.
            if isinstance(t, torch.Tensor) and t.device == device and t.untyped_storage().nbytes() > 0:
                key = _storage_key(t.untyped_storage())
                if key not in keep:
                    movable.setdefault(key, t.untyped_storage())
        caller = [t for t in [*leaves(batch), target] if isinstance(t, torch.Tensor)]
        pre = {_storage_key(t.untyped_storage()): t.untyped_storage().nbytes() for t in caller}
        every: Dict[int, int] = dict(pre)
        for t in consts:
            if isinstance(t, torch.Tensor):
                every.setdefault(_storage_key(t.untyped_storage()), t.untyped_storage().nbytes())
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
    key = _storage_key(out.untyped_storage())
    if (inp is not None and key == _storage_key(inp.untyped_storage())) or key in foreign:
        return out.clone()
    return out


class Checkpointed:
    """One training step, forward and backward, following a schedule.

    `step(batch, target)` returns the loss (a detached float tensor) and
    leaves the parameters' `.grad` filled (accumulated, like
    `loss.backward()`). After a call, `last_states[i]` is
    `{"op": i, "device": [...], "host": [...]}` — the tensors the wrapper held
    after op i, named like the simulator — and `last_forward_counts[ℓ]` the
    forwards stage ℓ ran.
    """

    def __init__(self, model, schedule: ScheduleLike, loss=None, granularity: str = "block",
                 merge: int = 1, chain=None, smaller_batch: bool = False, join_backwards: bool = True,
                 compile=False) -> None:
        from .staging import make_program

        # Over compiled stages (`remat_torch.compiled`): the partitioner
        # budget of every F_all without an option; None: eager.
        self.compile_budget = compile_budget(compile)
        self.model = model
        self.loss = loss
        self.granularity = granularity
        self.merge = merge
        # Without a loss: the user's list of stages (or StagingError saying a
        # loss is needed); with one, the stages are found at the first step.
        self.program = self._compiled(make_program(model, None, None, None)) if loss is None else None
        self.schedule: Schedule = load_schedule(schedule)
        # The chain, when given: its `inputs` (the batch the plan was made
        # for; else the schedule's copy of them) and its stages' menus
        # (which policy an F_all's `option` runs: the schedule gives only
        # the number).
        self.chain = _load_chain(chain) if chain is not None else None
        self.expected_inputs = _chain_inputs(self.chain) if self.chain is not None else self.schedule.inputs
        self.smaller_batch = smaller_batch
        self._warned = False
        self._programs: Dict[Tuple, object] = {}
        # The F_all whose ā^ℓ is taken apart (`tracked_forwards`): learned
        # once from the op list, not on every step.
        self.tracked = tracked_forwards(self.schedule.ops)
        if self.tracked and self.compile_budget is not None:
            i = min(self.tracked)
            raise ScheduleError(
                f"op {i} ({self.schedule.ops[i]}): the schedule moves or forgets ā^{self.schedule.ops[i].stage} "
                "before its backward, which remat_torch does not do over compiled stages (what a compiled "
                "graph saves is held by its autograd function): solve without offloading (rotor, revolve), "
                "or run eager"
            )
        # The F_all whose graph joins the previous stage's (one engine call
        # for consecutive backwards: `joined_forwards`).
        self.joined = joined_forwards(self.schedule.ops, self.tracked) if join_backwards else set()
        # The F_all with an option k ≥ 1: op index → the policy it runs
        # (`remat_torch.policies`), read from the chain's menus by `_check`.
        self.policies: Dict[int, str] = {}
        # Per program, listed once (walking the modules each step cost a ViT
        # 1–2 % of its step): the tensors that are never part of ā^ℓ
        # (`fixed_tensors`) and the parameters several stages read
        # (`shared_parameters`).
        self._facts: Dict[int, Tuple[List[torch.Tensor], List[nn.Parameter]]] = {}
        # Everything is checked before anything runs: a refused schedule
        # never leaves a half-done step (parameters' .grad partly filled).
        # A file's problems read as `remat simulate` words them.
        self._source = schedule
        if self.program is not None:
            self._check(len(self.program))
            self._check_model(self.program)
        self.record_states = True
        self.last_states: List[dict] = []
        self.last_forward_counts: List[int] = []

    def _check(self, n: int) -> None:
        try:
            counts = self._option_counts(n)
            check(self.schedule, n, counts)
        except ScheduleError as e:
            if isinstance(self._source, (str, os.PathLike)):
                what = "" if str(e).startswith(("stages:", "ops:", "ops[", "chain:")) else "invalid schedule: "
                raise ScheduleError(f"{os.fspath(self._source)}: {what}{e}") from None
            raise
        try:
            self.policies = self._option_policies() if counts is not None else {}
        except ScheduleError as e:
            if isinstance(self._source, (str, os.PathLike)):
                raise ScheduleError(f"{os.fspath(self._source)}: {e}") from None
            raise

    def _check_model(self, program) -> None:
        """Refuses a plan made for another model: the chain's (else the
        schedule's) `model_fingerprint` against this program's. A plan for a
        layer half as wide has the same stage count and batch, and would run
        with a peak far from its prediction."""
        from .staging import COMPILED_SUFFIX, fingerprint

        expected = self.chain.get("model_fingerprint") if self.chain is not None else None
        where = "chain" if expected is not None else "schedule"
        expected = expected or self.schedule.model_fingerprint
        if not isinstance(expected, str):
            return
        found = fingerprint(program)
        source = f"{os.fspath(self._source)}: " if isinstance(self._source, (str, os.PathLike)) else ""
        if found != expected and found.removesuffix(COMPILED_SUFFIX) == expected.removesuffix(COMPILED_SUFFIX):
            measured, running = ("compiled", "eager") if expected.endswith(COMPILED_SUFFIX) else ("eager", "compiled")
            raise ScheduleError(
                f"{source}model_fingerprint: the {where} was measured on {measured} stages and this wrapper runs "
                f"them {running}: their memory and times differ; pass "
                f"compile={'True' if measured == 'compiled' else 'False'} to checkpointed, as to describe_chain"
            )
        if found != expected:
            n = len(program)
            count = sum(p.numel() for p in program.all_parameters())
            raise ScheduleError(
                f"{source}model_fingerprint: the {where} was made for another model ({expected}); this "
                f"one ({found}: {n} stages, {count:,} parameters) differs in its stages' names or in "
                "their parameters' or buffers' shapes or dtypes (a wider layer, another depth, another "
                "dtype), and a plan's memory holds only for the model it was solved for: describe this "
                "model (describe_chain) and solve again"
            )

    def _option_counts(self, n: int) -> Optional[List[int]]:
        """How many ways each stage's F_all can run (1 + its menu's length;
        index 0 unused), from the chain, when the schedule runs an option;
        None when it runs none (nothing to look up)."""
        first = next((i for i, op in enumerate(self.schedule.ops) if op.option), None)
        if first is None:
            return None
        op = self.schedule.ops[first]
        if self.chain is None:
            raise ScheduleError(
                f"ops[{first}].option: {op} runs option {op.option} of stage {op.stage}'s menu, and a "
                "schedule does not say which policy that is: pass chain= (the chain file or dict the "
                "schedule was solved for) to checkpointed"
            )
        stages = self.chain.get("stages")
        if not isinstance(stages, list) or len(stages) != n:
            have = len(stages) if isinstance(stages, list) else "no"
            raise ScheduleError(
                f"chain: it has {have} stages, the network {n}: its menus are not this network's; "
                "pass the chain the schedule was solved for"
            )
        return [0] + [1 + len(_menu(stages, l)) for l in range(1, n + 1)]

    def _option_policies(self) -> Dict[int, str]:
        """Op index → policy name for every F_all with an option ≥ 1, checked:
        a policy remat_torch knows, and an F_all the schedule leaves alone
        until its B (what a policy keeps is held inside
        `torch.utils.checkpoint`, out of the wrapper's reach: an offload
        could not move it nor a release free it, and the recomputation in
        B^ℓ reads the input F_all^ℓ ran on)."""
        assert self.chain is not None
        stages = self.chain["stages"]
        ops = self.schedule.ops
        out: Dict[int, str] = {}
        for i, op in enumerate(ops):
            if not op.option:
                continue
            l, k = op.stage, op.option
            name = _menu(stages, l)[k - 1].get("policy")
            try:
                check_policies([name], "policy", compiled=self.compile_budget is not None)
            except ValueError as e:
                why = str(e).split(": ", 1)[1]
                raise ScheduleError(
                    f"stages[{l - 1}].menu[{k - 1}].policy: {name!r} is not a policy remat_torch runs here "
                    f"({why}); op {i} ({op}) runs it"
                ) from None
            j = taken_apart_by(ops, i)
            if j is not None:
                raise ScheduleError(
                    f"op {i} ({op}): op {j} ({ops[j]}) moves, forgets or recomputes ā^{l} or the input "
                    f"of stage {l} before B^{l}; remat_torch runs a menu option ({name}) only when "
                    f"nothing touches them until B^{l}: what the option keeps is held inside "
                    "torch.utils.checkpoint, out of reach of an offload or a release, and B^"
                    f"{l} recomputes from the input F_all^{l} ran on. Use option 0 there"
                )
            out[i] = name
        return out

    def _compiled(self, program):
        return program if self.compile_budget is None else compiled_program(program, self.compile_budget)

    def program_for(self, batch, target):
        """The stages for this batch's shapes: the user's list, or found in
        the model (once per shape, then reused)."""
        if self.program is not None:
            return self.program
        from .staging import make_program, signature

        key = signature(batch, target)
        program = self._programs.get(key)
        if program is None:
            program = self._compiled(make_program(self.model, batch, target, self.loss, self.granularity,
                                                  self.merge))
            self._check(len(program))
            self._check_model(program)
            self._programs[key] = program
        return program

    # --- the step -----------------------------------------------------------

    def __call__(self, batch, target=None) -> torch.Tensor:
        return self._run(batch, target).loss

    def facts(self, program) -> Tuple[List[torch.Tensor], List[nn.Parameter]]:
        """(`fixed_tensors`, `shared_parameters`) of a program, once."""
        facts = self._facts.get(id(program))
        if facts is None:
            facts = self._facts[id(program)] = (fixed_tensors(program), shared_parameters(program, len(program)))
        return facts

    def check_batch(self, batch, target) -> None:
        """Refuses a batch of other shapes or element types than the plan's
        (`remat_torch.batch.BatchMismatch`), before anything runs; a smaller
        batch, when allowed, runs with a warning (once)."""
        if self.expected_inputs is None:
            return
        import warnings

        from .batch import compare, describe

        plan = f"({self.schedule.algorithm or 'hand-written'} for {self.schedule.chain_name or 'its chain'})"
        warning = compare(describe(batch, target), self.expected_inputs, plan, self.smaller_batch)
        if warning and not self._warned:
            warnings.warn(warning, stacklevel=3)
            self._warned = True

    def _run(self, batch, target, boundary=None, meter=None) -> "_Step":
        self.check_batch(batch, target)
        program = self.program_for(batch, target)
        state = getattr(program, "python_state", None)
        if state is not None:
            state.check()
        run = _Step(self, program, batch, target, meter)
        run.execute(boundary)
        self.last_states = run.states
        self.last_forward_counts = run.forward_counts
        self.last_inputs = run.inputs
        return run

    def measure_step(self, batch, target=None, set_to_none: bool = True) -> Tuple[torch.Tensor, int]:
        """One step with the allocator watched (`remat_torch.measure`):
        (the loss, the step's peak in the chain's terms — what the plan's
        `predicted_peak_bytes` predicts: a^0 and everything the step holds,
        the parameters and the step constants outside). `set_to_none` as
        the chain was described with (`describe_chain`, default True):
        True, the parameter gradients are cleared to None first, as
        `zero_grad(set_to_none=True)` does, and the ones the step creates
        count; False, they are outside."""
        from .measure import Meter

        program = self.program_for(batch, target)
        if set_to_none:
            for p in program.all_parameters():
                p.grad = None
        meter = Meter(device_of(batch), booked_outside(program, set_to_none))
        run, _, peak = meter.measure(lambda: self._run(batch, target, meter=meter))
        return run.loss, peak + run.inputs.offset_bytes

    def record_run(self, batch, target=None, path=None, repeat: int = 3, set_to_none: bool = True) -> Dict:
        """One step of this plan recorded as a `remat-run/1` document (written
        to `path` if given): after each operation the chain's memory and
        the peak during it, as `measure_step` counts them, and its time, the
        median of `repeat` further steps (the memory step is watched by the
        allocator's events, which slow it). `remat simulate CHAIN SCHEDULE
        --measured RUN` prints it against the prediction, and the explorer
        overlays it on the memory curve. The parameters' `.grad`, the
        buffers and the RNG state are left as they were. `set_to_none` as
        in `measure_step`."""
        import json
        import statistics
        import time

        from .measure import Meter, TrainingState

        if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
            raise ValueError(f"repeat: expected a whole number ≥ 1, got {repeat!r}")
        program = self.program_for(batch, target)
        device = device_of(batch)
        params = list(program.all_parameters())
        state = TrainingState(params, list(program.all_buffers()), device)
        cuda = device.type == "cuda"

        n_ops = len(self.schedule.ops)
        try:
            state.reset()
            meter = Meter(device, booked_outside(program, set_to_none))
            run, ops = meter.measure_ops(
                lambda boundary: self._run(batch, target, lambda i: boundary(), meter))
            offset = run.inputs.offset_bytes
            times: List[List[float]] = [[] for _ in range(n_ops)]
            for _ in range(repeat):
                state.reset()
                marks = [0.0] * (n_ops + 1)

                def tick(i: int) -> None:
                    if cuda:
                        torch.cuda.synchronize(device)
                    marks[i + 1] = time.perf_counter()

                if cuda:
                    torch.cuda.synchronize(device)
                # The step's setup (its constants) is counted in op 0.
                marks[0] = time.perf_counter()
                self._run(batch, target, tick)
                for i in range(n_ops):
                    times[i].append(marks[i + 1] - marks[i])
        finally:
            state.restore()
        threads = torch.get_num_threads()
        where = torch.cuda.get_device_name(device) if cuda else f"cpu, {threads} threads"
        how = "torch.cuda memory statistics" if cuda else "the CPU allocator's events (torch.profiler)"
        doc = {
            "format": "remat-run/1",
            "chain_name": self.schedule.chain_name,
            "algorithm": self.schedule.algorithm,
            "budget_bytes": self.schedule.budget_bytes or 0,
            "source": (
                f"measured by remat_torch.Checkpointed.record_run: {where}, PyTorch "
                f"{torch.__version__.split('+')[0]}, {time.strftime('%Y-%m-%d')}; memory: {how}, "
                + ("parameter gradients inside from their creation (set_to_none=True), step constants outside"
                   if set_to_none else "parameter gradients and step constants outside")
                + "; times: medians of "
                f"{repeat} steps, each op timed to its end"
            ),
            "ops": [],
        }
        if self.schedule.chain_digest:
            doc["chain_digest"] = self.schedule.chain_digest
        for op, (mem, peak), t in zip(self.schedule.ops, ops, times):
            row = {"op": op.kind, "stage": op.stage}
            if op.option:
                # Which menu option this F_all ran, as the schedule says it.
                row["option"] = op.option
            if op.tensor is not None:
                row["tensor"] = op.tensor
            memory = max(0, mem + offset)
            row.update(seconds=statistics.median(t), memory_bytes=memory,
                       peak_bytes=max(memory, peak + offset))
            doc["ops"].append(row)
        if path is not None:
            with open(os.fspath(path), "w", encoding="utf-8") as f:
                json.dump(doc, f, indent=1)
        return doc


def _load_chain(chain) -> Dict:
    """A chain given as a path or a decoded dict, as a dict."""
    import json

    if isinstance(chain, dict):
        return chain
    with open(os.fspath(chain), encoding="utf-8") as f:
        doc = json.load(f)
    if not isinstance(doc, dict):
        raise ScheduleError(f"{os.fspath(chain)}: expected a remat-chain/1 object")
    return doc


def _chain_inputs(chain: Dict) -> Optional[List[Dict]]:
    """The `inputs` of a decoded chain."""
    from .schedule import parse_inputs

    return parse_inputs(chain.get("inputs"))


def _menu(stages: List, l: int) -> List[Dict]:
    """Stage ℓ's menu in a decoded chain (empty when it has none)."""
    stage = stages[l - 1]
    menu = stage.get("menu") if isinstance(stage, dict) else None
    if menu is None:
        return []
    if not isinstance(menu, list) or not all(isinstance(o, dict) for o in menu):
        raise ScheduleError(f"stages[{l - 1}].menu: expected a list of {{\"policy\", \"saved_bytes\", …}}")
    return menu


class _Step:
    """The state of one call: the records, RNG states, the copy stream."""

    def __init__(self, owner: Checkpointed, program, batch, target, meter=None) -> None:
        self.owner = owner
        self.program = program
        self.n = len(program)
        self.target = target
        self.device = device_of(batch)
        cuda = self.device.type == "cuda"
        self.copy_stream = torch.cuda.Stream(device=self.device) if cuda else None
        self.consts = program.constants(batch, target)
        first = program.first_input(batch)
        self.x = first
        fixed, shared = owner.facts(program)
        self.inputs = StepInputs(program, batch, target, self.consts, fixed)
        # A found model's stage 1 reads a^0 among the step constants.
        a0 = _Activation(None if first is None else first.detach())
        a0.moved = _Moved(self.inputs.movable)
        self.meter = meter
        if meter is not None:
            meter.rehome(st for st in self.inputs.movable if _storage_key(st) in self.inputs.preexisting)
        self.act: Dict[int, _Activation] = {0: a0}
        self.saved: Dict[int, _Saved] = {}
        # δ^L is resident from the start (the loss seed); None: autograd's
        # implicit 1 for the scalar loss.
        self.grad: Dict[int, Optional[torch.Tensor]] = {self.n: None}
        self.rng: Dict[int, Optional[Tuple[bytes, Optional[bytes]]]] = {}
        self.forwards = owner.schedule.forwards_per_stage(self.n)
        self.forward_counts = [0] * (self.n + 1)
        self.states: List[dict] = []
        self.loss: Optional[torch.Tensor] = None
        if first is not None:
            self.input_gradient = needs_input_gradient(program.modules[0], first)
        else:
            self.input_gradient = False
        # A 0-d leaf so that every recorded input has a graph (`Entry`).
        self.anchor = torch.zeros((), device=self.device, requires_grad=True)
        # Storages that are never part of ā^ℓ: parameters and buffers (the
        # model's, outside the chain's memory), the target and the step
        # constants.
        self.foreign = foreign_storages(fixed, self.consts)
        # A parameter read by several stages (GPT-2's tied embedding: stage 1
        # and the LM head) gets one gradient per stage; a plain step sums
        # them in the graph and adds the sum to `.grad` once. Added one by
        # one to an accumulated `.grad` they round differently (gradient
        # accumulation drifted from plain training in the last bit), so
        # such a parameter's `.grad` is set aside during the step and the
        # step's sum added to it at the end, as autograd does.
        self.set_aside = [(p, p.grad) for p in shared if p.grad is not None]
        # Per stage, which of those parameters it reads (ids).
        ids = {id(p) for p in shared}
        self.shared_in = [frozenset()] + [
            frozenset(id(p) for p in program.parameters(l) if id(p) in ids) for l in range(1, self.n + 1)
        ]
        for p, _ in self.set_aside:
            p.grad = None
        # The devices whose autocast the caller's step runs under: the usual
        # recipe runs `loss.backward()` outside autocast, and so do the
        # backwards here (run inside it, a backward formula that dispatches
        # a matmul or an attention gets autocast's casts: bf16 training
        # drifted from the usual loop from its second step). Forwards and
        # recomputations run under it, as the first forward did.
        self.autocast = [d for d in ("cpu", "cuda") if torch.is_autocast_enabled(d)]

    def outside_autocast(self):
        """A context in which the caller's autocast is off."""
        stack = contextlib.ExitStack()
        for d in self.autocast:
            stack.enter_context(torch.autocast(device_type=d, enabled=False))
        return stack

    def execute(self, boundary=None) -> torch.Tensor:
        """Runs the ops in order; `boundary(i)`, if given, after each. If an
        op fails, the caller's batch is given back before the error goes on:
        an offloaded a^0 is the caller's own storage, and a later step (or
        the user) would read it emptied."""
        try:
            return self._execute(boundary)
        except BaseException:
            a0 = self.act.get(0)
            if a0 is not None and a0.moved.on_host() and not a0.moved.on_device():
                a0.moved.prefetch(self.copy_stream)
                a0.moved.wait()
            # Nor is a shared parameter's accumulated gradient lost.
            self.put_back_set_aside()
            raise

    def _execute(self, boundary) -> torch.Tensor:
        for i, op in enumerate(self.owner.schedule.ops):
            if op.kind in FORWARDS:
                self.forward(op, i in self.owner.tracked, i in self.owner.joined, self.owner.policies.get(i))
            elif op.kind == "backward":
                with self.outside_autocast():
                    self.backward(op)
            elif op.kind == "offload":
                self.record_of(op).moved.offload(self.copy_stream)
            elif op.kind == "prefetch":
                self.record_of(op).moved.prefetch(self.copy_stream)
            else:
                self.release(op)
            if self.owner.record_states:
                self.states.append(self.snapshot(i))
            if boundary is not None:
                boundary(i)
        self.put_back_set_aside()
        x = self.x
        if x is not None and x.requires_grad and self.grad.get(0) is not None:
            d0 = self.grad[0]
            x.grad = d0 if x.grad is None else x.grad + d0
        assert self.loss is not None
        return self.loss

    def put_back_set_aside(self) -> None:
        """The shared parameters' `.grad` set aside at the start, with the
        step's sum added once (as autograd adds it)."""
        for p, before in self.set_aside:
            if p.grad is not None:
                with torch.no_grad():
                    before += p.grad
            p.grad = before
        self.set_aside = []

    # --- records -------------------------------------------------------------

    def table_of(self, op: Op) -> dict:
        return self.saved if op.tensor == "saved" else self.act

    def record_of(self, op: Op):
        return self.table_of(op)[op.stage]

    def release(self, op: Op) -> None:
        """R(a^ℓ), R(ā^ℓ): the record is forgotten, its device memory freed
        or its host copy dropped; a later read needs the recomputation or
        the prefetch the schedule lists. (a^0, the caller's batch, is never
        released by a valid schedule: nothing can make it again and B^1
        reads it, so its storage is never resized here.)"""
        self.table_of(op).pop(op.stage).moved.release()

    def input_of(self, l: int):
        """The input of stage ℓ: a^{ℓ-1} if on the device, else ā^{ℓ-1}."""
        a = self.act.get(l - 1)
        if a is not None and a.moved.on_device():
            return a
        s = self.saved.get(l - 1)
        if s is not None and s.moved.on_device():
            return s
        # Unreachable for a validated schedule.
        raise RuntimeError(f"stage {l}: no input on the device")

    def snapshot(self, i: int) -> dict:
        device, host = [], []
        for sym, table in (("a", self.act), ("ā", self.saved)):
            for l in sorted(table):
                m = table[l].moved
                if m.on_device():
                    device.append(f"{sym}^{l}")
                if m.on_host():
                    host.append(f"{sym}^{l}")
        device += [f"δ^{l}" for l in sorted(self.grad)]
        return {"op": i, "device": device, "host": host}

    # --- forward ------------------------------------------------------------

    @contextlib.contextmanager
    def replay(self, l: int):
        """A recomputed forward of stage ℓ sees the RNG state of its first
        forward (same dropout mask) and leaves no trace: the global RNG
        continues as after a plain step, and buffers (BatchNorm running
        statistics, num_batches_tracked) keep the one update of the first
        forward, as a plain step makes.

        The state is kept only for stages the schedule runs more than once,
        as Python bytes, and buffers are snapshotted in host memory: a CPU
        RNG state is a 5 KiB tensor from the CPU allocator, which on the CPU
        is the device's memory (14 of them put a ViT's measured peak 0.6 %
        above the prediction)."""
        if l not in self.rng:
            if self.forwards[l] > 1:
                with self.outside():
                    self.rng[l] = rng.current(self.device)
            else:
                self.rng[l] = None
            yield
            return
        if self.rng[l] is None:
            raise RuntimeError(f"stage {l} runs more forwards than its schedule lists")
        cpu_state, cuda_state = self.rng[l]
        buffers = [(b, host_copy(b)) for b in self.program.buffers(l)]
        with self.outside():
            now = rng.current(self.device)
            rng.restore(cpu_state, cuda_state, self.device)
        try:
            yield
        finally:
            with self.outside():
                rng.restore(*now, self.device)
        # Through `.data`: a write that autograd's version counter does not
        # see. The recomputed graph saved these buffers (BatchNorm's backward
        # takes the running statistics as arguments, and reads none of them
        # in training mode); restoring them is no change it must refuse.
        with torch.no_grad():
            for b, old in buffers:
                b.data.copy_(old)

    def outside(self):
        """The RNG bookkeeping's instants: RNG states are host memory (a
        GPU's count never sees them), but on the CPU `torch.get_rng_state`
        takes its 5 KiB from the allocator that stands for the device's
        memory; a measurement books them outside (`Meter.outside`), as a
        GPU's would."""
        if self.meter is None:
            return contextlib.nullcontext()
        return self.meter.outside()

    def forward(self, op: Op, tracked: bool = True, join: bool = False, policy: Optional[str] = None) -> None:
        l = op.stage
        last = l == self.n
        src = self.input_of(l)
        src.moved.wait()
        inp = src.tensor()
        self.forward_counts[l] += 1
        with self.replay(l):
            if op.kind == "forward_all":
                box: list = []
                # Joined only where the engine call would not span two
                # readers of one parameter: there autograd sums their
                # gradients in its own buffer before `.grad` (GPT-2's tied
                # embedding: the LM head's part, 128 kB on the test model,
                # held from B^L to B^1), memory the chain books nowhere —
                # plans that run every stage's F_all (menu options make
                # them common below M_high) peaked 5.6–9.5 % above their
                # prediction (test_menus.py). Apart, each part lands in
                # `.grad` at once, summed there with one addition as the
                # engine would have summed it.
                joined = (join and isinstance(src, _Saved) and src.whole and src is self.saved.get(l - 1)
                          and not (self.shared_in[l] & src.run_shared))
                if inp is None:
                    alias = None
                elif joined:
                    # The graph continues into ā^{ℓ-1}'s: B^ℓ and B^{ℓ-1}
                    # run as one engine call (`joined_forwards`).
                    alias = inp
                elif l > 1 or self.input_gradient:
                    # The graph of stage ℓ stops at this view; B^ℓ's δ^{ℓ-1} lands in `box`.
                    alias = Entry.apply(inp.detach(), self.anchor, box)
                else:
                    alias = inp.detach()
                if policy is not None:
                    # A menu option (never tracked: `_option_policies`): the
                    # stage under that selective checkpoint; B^ℓ recomputes
                    # what it did not keep. ā^ℓ is the output, and what the
                    # checkpoint holds (not listed: it cannot be moved).
                    out = self.recording_with_option(l, alias, policy)
                    storages, stage_input = [], None
                elif tracked:
                    out, storages, stage_input = self.recording_taken_apart(l, alias)
                else:
                    # Nothing moves or forgets ā^ℓ or the input before B^ℓ:
                    # autograd keeps what it saves, as in a plain step.
                    with torch.enable_grad():
                        out = owned(self.program.run(l, alias, self.consts), alias, self.foreign)
                    storages, stage_input = [], None
                if not out.requires_grad:
                    raise RuntimeError(
                        f"stage {l}: its output does not require grad, so B^{l} has nothing to "
                        "back-propagate"
                    )
                self.saved[l] = _Saved(out, alias, storages, stage_input, box)
                self.saved[l].joined = joined
                self.saved[l].run_shared = self.shared_in[l] | (src.run_shared if joined else frozenset())
            else:
                with torch.no_grad():
                    out = owned(self.program.run(l, inp, self.consts), inp, self.foreign)
                self.act[l] = _Activation(out)
        if last:
            self.loss = out.detach().clone().float()
        if isinstance(src, _Activation):
            if op.kind == "forward_checkpoint":
                src.checkpoint = True
            elif op.kind == "forward_none" and not src.checkpoint:
                del self.act[l - 1]

    def recording_with_option(self, l: int, alias: Optional[torch.Tensor], policy: str) -> torch.Tensor:
        """F_all^ℓ under a menu option's policy (`remat_torch.policies`), or
        the stage compiled at the partitioner budget it names
        (`remat_torch.compiled`)."""
        budget = budget_of(policy)
        if budget is not None:
            with torch.enable_grad():
                return owned(self.program.run(l, alias, self.consts, budget=budget), alias, self.foreign)

        def stage(*x: torch.Tensor) -> torch.Tensor:
            h = x[0] if x else None
            return owned(self.program.run(l, h, self.consts), h, self.foreign)

        with torch.enable_grad():
            return run_option(policy, stage, () if alias is None else (alias,), device=self.device,
                              buffers=self.program.buffers(l), outside=self.outside)

    def recording_taken_apart(self, l: int, alias: Optional[torch.Tensor]):
        """F_all^ℓ with ā^ℓ's storages found (a saved-tensors hook sees every
        tensor autograd saves) and the input kept as `_InputView`s, so that
        the schedule can move or forget ā^ℓ and B^ℓ reads whichever input is
        resident then. Returns (output, storages, stage input)."""
        stage_input = None if alias is None else _StageInput(alias)
        input_key = None if stage_input is None else stage_input.key
        collected: List[torch.UntypedStorage] = []

        def pack(t: torch.Tensor):
            if input_key is not None and _storage_key(t.untyped_storage()) == input_key:
                return _InputView(stage_input, t)
            collected.append(t.untyped_storage())
            # Detached: returning the output itself would make its
            # grad_fn hold the tensor that holds it (a cycle that only
            # the garbage collector frees, keeping ā^ℓ's memory).
            return t.detach()

        def unpack(t) -> torch.Tensor:
            return t.tensor() if isinstance(t, _InputView) else t

        with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            out = self.program.run(l, alias, self.consts)
            out = owned(out, alias, self.foreign)
        # ā^ℓ is what the stage made: not a parameter, buffer, module
        # attribute, step constant, the target or the input. (A dispatch
        # mode that saw every op's outputs found the same storages, but
        # changed the kernels: under it scaled_dot_product_attention's
        # backward took 2.2 MiB more on a 4-block GPT-2 than in a plain
        # step, and each aten op paid a Python call.)
        # Only the device's memory: autograd also saves host tensors (a CPU
        # scalar a traced graph made), which are not ā^ℓ's and cannot go on
        # the copy stream.
        storages = [
            st for st in collected
            if st.device == self.device and _storage_key(st) != input_key and _storage_key(st) not in self.foreign
        ]
        # Autograd keeps the pack hook (with the unpack hook) as long as the
        # graph lives: what it collected must not stay referenced through
        # it, or every saved tensor of ā^ℓ is held until B^ℓ ends instead of
        # freed after its last reader (+2.2 MiB over the measured o_b on a
        # 4-block GPT-2's block).
        collected.clear()
        return out, storages, stage_input

    # --- backward -----------------------------------------------------------

    def backward(self, op: Op) -> None:
        """B^ℓ as autograd runs it in a plain step: the runtime drops its own
        references to ā^ℓ and δ^ℓ first, so the engine frees each saved
        tensor and δ^ℓ after its last reader (the measured, signed o_b^ℓ of
        a described chain accounts for exactly that)."""
        l = op.stage
        rec = self.saved.pop(l)
        if rec.done:
            # Back-propagated with a later stage's B, in one engine call.
            self.grad.pop(l)
            self.settle(l, rec.d_prev)
            return
        rec.moved.wait()
        src = self.input_of(l)
        src.moved.wait()
        # The graph reads the input resident now, as the simulator's B^ℓ
        # does: not necessarily the tensor F_all^ℓ ran on, which may have
        # been released or offloaded since (`_StageInput`).
        stage_input = rec.stage_input
        if stage_input is not None:
            stage_input.bind(l, src.tensor())
        # The stages this engine call goes through: ℓ, and below it every
        # stage whose graph the one above joined.
        run = [rec]
        while run[-1].joined:
            run.append(self.saved[l - len(run)])
        last = run[-1]
        k = l - len(run) + 1
        delta = self.grad.pop(l)
        out_box = [rec.out]
        grad_box = last.grad_box
        alias = last.alias
        for r in run:
            r.out = None
            r.alias = None
            r.moved.storages = []
        del rec, r, last
        delta_box = [] if delta is None else [delta]
        del delta
        try:
            backward_handing_over(out_box, delta_box)
        finally:
            if stage_input is not None:
                stage_input.now = None
        d_prev = grad_box[0] if grad_box else None
        if d_prev is None and (k > 1 or self.input_gradient):
            # The stage's output does not depend on its input.
            d_prev = torch.zeros_like(alias)
        if k == l:
            self.settle(l, d_prev)
            return
        # δ^{ℓ-1} … δ^k stayed inside the engine, freed after their last
        # reader as in a plain step; B^{ℓ-1} … B^{k} only settle the books.
        self.saved[k].d_prev = d_prev
        for j in range(k, l):
            self.saved[j].done = True
        self.settle(l, _INSIDE)

    def settle(self, l: int, d_prev) -> None:
        """After B^ℓ: a^{ℓ-1} is no longer needed, δ^{ℓ-1} is there."""
        a = self.act.get(l - 1)
        if a is not None and a.moved.on_device():
            del self.act[l - 1]
        self.grad[l - 1] = d_prev


# δ^ℓ between two backwards run in one engine call: there, but held by the
# engine, not by the runtime.
_INSIDE = object()


def checkpointed(model, schedule: ScheduleLike, loss=None, granularity: str = "block",
                 merge: int = 1, chain=None, smaller_batch: bool = False,
                 join_backwards: bool = True, compile=False) -> Checkpointed:
    """`step = checkpointed(model, "schedule.json", loss=fn)`; then
    `loss = step(batch, target)`.

    `model` is any `nn.Module` (with `loss`, `fn(output, target)` returning
    the scalar loss, as the training loop computes it): its stages are found
    as `describe_chain` found them (same `granularity` and `merge`), once per
    batch shape. Without `loss`, `model` is an `nn.Sequential` or a list of
    modules, one per stage, the last one called as `stage(activation,
    target)` and returning the loss. `batch` is a tensor or a dict of the
    model's keyword inputs. The schedule is a `remat-schedule/1` file path,
    its decoded JSON, or a `Schedule`; it is checked against the number of
    stages and replayed with the simulator's rules before any step runs
    (ScheduleError with the reason otherwise).

    Each step's batch (and target) is checked against the batch the plan
    was made for — the schedule's `inputs` (written by `remat solve` from
    the chain's), or those of `chain` (a path or dict) — and a batch of
    other shapes or element types is refused (`BatchMismatch`) before
    anything runs; with `smaller_batch=True` a batch smaller along the
    first dimension runs, with a warning that the plan's memory is then an
    upper bound.

    An F_all with `"option": k` runs the selective-checkpointing policy
    entry k − 1 of the stage's menu names (`remat_torch.policies`): such a
    schedule needs `chain` (the schedule numbers options, the chain names
    them).

    Backwards the schedule runs back to back (B^ℓ, B^{ℓ-1}, …) run as one
    call of autograd's engine, as a plain step runs them (a call per stage
    cost 12–34 % of a small or fast step); their memory then follows the
    engine's order, within a few percent of the chain's per-stage o_b, and a
    recorded run books it at the first B. `join_backwards=False` runs one
    engine call per B, the chain's model op for op.

    `compile=True` (or a partitioner budget) runs the stages through
    `torch.compile`, as `describe_chain(..., compile=...)` measured them
    (`remat_torch.compiled`); an option `activation_memory_budget=b` runs
    its stage compiled at b. A chain measured compiled is refused on eager
    stages and the other way round (its `model_fingerprint` says which).
    """
    return Checkpointed(model, schedule, loss=loss, granularity=granularity, merge=merge, chain=chain,
                        smaller_batch=smaller_batch, join_backwards=join_backwards, compile=compile)
