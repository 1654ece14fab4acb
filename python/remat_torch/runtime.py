"""Runs training steps of a chain of modules following a Remat schedule:
`checkpointed(model, schedule)` and its `Checkpointed`, which checks the
schedule, the model and each batch against the plan before anything runs,
then runs each step as a `remat_torch.step.Step`. The tensors of
docs/model.md as the runtime holds them are in `remat_torch.records`; what
a step holds throughout and may move, in `remat_torch.step_inputs`.
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Tuple

import torch
from torch import nn

from .batch import device_of
from .compiled import compile_budget, compiled_program
from .policies import check_policies
from .schedule import (Schedule, ScheduleError, ScheduleLike, check, joined_forwards, load_schedule,
                       taken_apart_by, tracked_forwards)
from .step import Step
from .step_inputs import booked_outside, fixed_tensors, shared_parameters


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
                 compile=False, join_glue: bool = False, loss_apart: bool = False, paths: str = "eager") -> None:
        from .staging import make_program

        # Over compiled stages (`remat_torch.compiled`): the partitioner
        # budget of every F_all without an option; None: eager.
        self.compile_budget = compile_budget(compile)
        self.model = model
        self.loss = loss
        self.granularity = granularity
        self.merge = merge
        self.join_glue = join_glue
        self.loss_apart = loss_apart
        self.paths = paths
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
                                                  self.merge, self.join_glue, self.loss_apart, self.paths))
            self._check(len(program))
            self._check_model(program)
            self._programs[key] = program
        return program

    def adopt(self, program, batch, target) -> None:
        """Runs over `program` (stages found, and compiled, by
        `describe_chain`) for batches shaped as `batch`: nothing is found or
        compiled again."""
        from .staging import signature

        self._check(len(program))
        self._check_model(program)
        if self.program is not None:
            self.program = program
        else:
            self._programs[signature(batch, target)] = program

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

    def _run(self, batch, target, boundary=None, meter=None) -> "Step":
        self.check_batch(batch, target)
        program = self.program_for(batch, target)
        state = getattr(program, "python_state", None)
        if state is not None:
            state.check()
        run = Step(self, program, batch, target, meter)
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



def checkpointed(model, schedule: ScheduleLike, loss=None, granularity: str = "block",
                 merge: int = 1, chain=None, smaller_batch: bool = False,
                 join_backwards: bool = True, compile=False, join_glue: bool = False,
                 loss_apart: bool = False, paths: str = "eager") -> Checkpointed:
    """`step = checkpointed(model, "schedule.json", loss=fn)`; then
    `loss = step(batch, target)`.

    `model` is any `nn.Module` (with `loss`, `fn(output, target)` returning
    the scalar loss, as the training loop computes it): its stages are found
    as `describe_chain` found them (same `granularity`, `merge`,
    `join_glue`, `loss_apart` and `paths`), once per
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
                        smaller_batch=smaller_batch, join_backwards=join_backwards, compile=compile,
                        join_glue=join_glue, loss_apart=loss_apart, paths=paths)
