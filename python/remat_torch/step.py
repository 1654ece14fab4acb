"""One call of a `Checkpointed`: the interpreter of a schedule's ops
(F_all, F_ck, F_∅, B, offload, prefetch, release) over the tensor records
of `remat_torch.records`, with the RNG states a recomputation replays and
the copy stream transfers run on."""

from __future__ import annotations

import contextlib
from typing import Dict, List, Optional, Tuple

import torch

from . import rng
from .batch import device_of
from .compiled import budget_of
from .host import host_copy
from .policies import run_option
from .records import (Activation, EarlySeed, Entry, InputView, Moved, Saved, StageInput, backward_handing_over,
                      storage_key)
from .schedule import FORWARDS, Op
from .step_inputs import StepInputs, foreign_storages, needs_input_gradient, owned


class Step:
    """The state of one call: the records, RNG states, the copy stream."""

    def __init__(self, owner, program, batch, target, meter=None) -> None:
        # owner: the `remat_torch.runtime.Checkpointed` this call runs for
        # (its schedule, options and checked facts).
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
        a0 = Activation(None if first is None else first.detach())
        a0.moved = Moved(self.inputs.movable)
        self.meter = meter
        if meter is not None:
            meter.rehome(st for st in self.inputs.movable if storage_key(st) in self.inputs.preexisting)
        self.act: Dict[int, Activation] = {0: a0}
        self.saved: Dict[int, Saved] = {}
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
        frees = self.owner.schedule.offload_frees
        # Offloaded tensors whose device copy is held, by the op after
        # which the simulator frees it (its copy ends while that op runs).
        held: Dict[int, List[Moved]] = {}
        for i, op in enumerate(self.owner.schedule.ops):
            if op.kind in FORWARDS:
                self.forward(op, i in self.owner.tracked, i in self.owner.joined, self.owner.policies.get(i))
            elif op.kind == "backward":
                with self.outside_autocast():
                    self.backward(op)
            elif op.kind == "offload":
                moved = self.record_of(op).moved
                later = frees.get(i, i) > i
                moved.offload(self.copy_stream, hold=later)
                if later:
                    held.setdefault(frees[i], []).append(moved)
            elif op.kind == "prefetch":
                self.record_of(op).moved.prefetch(self.copy_stream)
            else:
                self.release(op)
            for moved in held.pop(i, ()):
                moved.free_device()
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
                joined = (join and isinstance(src, Saved) and src.whole and src is self.saved.get(l - 1)
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
                self.saved[l] = Saved(out, alias, storages, stage_input, box)
                self.saved[l].joined = joined
                self.saved[l].run_shared = self.shared_in[l] | (src.run_shared if joined else frozenset())
            else:
                with torch.no_grad():
                    out = owned(self.program.run(l, inp, self.consts), inp, self.foreign)
                self.act[l] = Activation(out)
        if last:
            self.loss = out.detach().clone().float()
        if isinstance(src, Activation):
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
        tensor autograd saves) and the input kept as `InputView`s, so that
        the schedule can move or forget ā^ℓ and B^ℓ reads whichever input is
        resident then. Returns (output, storages, stage input)."""
        stage_input = None if alias is None else StageInput(alias)
        input_key = None if stage_input is None else stage_input.key
        collected: List[torch.UntypedStorage] = []

        def pack(t: torch.Tensor):
            if input_key is not None and storage_key(t.untyped_storage()) == input_key:
                return InputView(stage_input, t)
            collected.append(t.untyped_storage())
            # Detached: returning the output itself would make its
            # grad_fn hold the tensor that holds it (a cycle that only
            # the garbage collector frees, keeping ā^ℓ's memory).
            return t.detach()

        def unpack(t) -> torch.Tensor:
            return t.tensor() if isinstance(t, InputView) else t

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
            if st.device == self.device and storage_key(st) != input_key and storage_key(st) not in self.foreign
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
        # been released or offloaded since (`StageInput`).
        stage_input = rec.stage_input
        if stage_input is not None and stage_input.read:
            stage_input.bind(l, src.tensor())
        # The stages this engine call goes through: ℓ, and below it every
        # stage whose graph the one above joined.
        run = [rec]
        while run[-1].joined:
            run.append(self.saved[l - len(run)])
        last = run[-1]
        k = l - len(run) + 1
        delta = self.grad.pop(l)
        out_box = [rec.out if rec.seed is None else rec.seed]
        grad_box = last.grad_box
        # Only its shape, strides and type (a δ^{k-1} of zeros below): the
        # tensor itself would keep a^{k-1} alive through B^k.
        like = None if last.alias is None else torch.empty_like(last.alias, device="meta")
        for r in run:
            r.out = None
            r.seed = None
            r.alias = None
            r.moved.storages = []
        del rec, r, last
        # The inputs of ℓ … k+1 were the outputs just let go; k's may go too.
        self.drop_input(k, src if k == l else self.input_of(k))
        del src
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
            d_prev = torch.zeros_like(like, device=self.device)
        if k == l:
            self.settle(l, d_prev)
            return
        # δ^{ℓ-1} … δ^k stayed inside the engine, freed after their last
        # reader as in a plain step; B^{ℓ-1} … B^{k} only settle the books.
        self.saved[k].d_prev = d_prev
        for j in range(k, l):
            self.saved[j].done = True
        self.settle(l, _INSIDE)

    def drop_input(self, l: int, src) -> None:
        """The runtime's own references to a^{ℓ-1} dropped as B^ℓ starts, so
        that whatever B^ℓ's graph does not read is freed then, not after it
        (the chain's ι^ℓ, `input_freed_bytes`: a loss's logits). A plain
        a^{ℓ-1} is not needed after B^ℓ (`settle` forgets it). ā^{ℓ-1}
        is, but only as the start of B^{ℓ-1}: its output is traded for an
        `EarlySeed`, which holds the graph and not the tensor, and leaves
        what ā^{ℓ-1}'s own graph saved in place (its moves too)."""
        a = self.act.get(l - 1)
        if a is not None and a is src and a.moved.on_device() and a.value is not None:
            # The tensor goes; the record stays in the books until `settle`,
            # as the simulator's (ι^ℓ is B^ℓ's overhead, not a free).
            a.value = None
            a.moved.forget()
        prev = self.saved.get(l - 1)
        if prev is not None and prev is src and prev.out is not None and not prev.done:
            out = prev.out
            prev.seed = EarlySeed(out)
            prev.out = None
            prev.moved.forget(out.untyped_storage())
            del out

    def settle(self, l: int, d_prev) -> None:
        """After B^ℓ: a^{ℓ-1} is no longer needed, δ^{ℓ-1} is there."""
        a = self.act.get(l - 1)
        if a is not None and a.moved.on_device():
            del self.act[l - 1]
        self.grad[l - 1] = d_prev


# δ^ℓ between two backwards run in one engine call: there, but held by the
# engine, not by the runtime.
_INSIDE = object()
