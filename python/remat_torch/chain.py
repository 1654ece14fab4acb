"""A `remat-chain/1` description of a PyTorch model, measured as it trains.

    chain = remat_torch.describe_chain(model, batch, target, loss=fn)

Stages are found in the model (`staging.find_stages`) and checked against
the model's own forward and `loss.backward()`, bit for bit; or, without
`loss`, they are the user's list of modules (the last returning the loss).

Sizes come from the allocator (`measure.Meter`), the way
`../shared/reference/README.md` and remat-profile measure them, each stage
on its own, in backward order so that a shared weight's gradient exists
when its earlier stage runs backward, as in a step:

* ω_a^ℓ: what a no-grad forward leaves allocated (the input held apart);
* ω_ā^ℓ: what a recording forward leaves (output and saved tensors);
* o_f^ℓ: the transient peak above what the recording forward (F_all)
  leaves; the no-grad forward's (F_ck, F_∅) apart, as
  `forward_nograd_overhead_bytes`;
* o_b^ℓ: the peak of B^ℓ run as autograd runs it — the output and δ^ℓ
  handed to autograd and freed after their last reader — above its start,
  minus ω_δ^{ℓ-1}; signed (docs/model.md);
* ω_δ^ℓ: the gradient B^{ℓ+1} really produced; a^0 (`input_bytes`): the
  batch, the target and the step constants.

Times are eager medians after a warm-up, with the profiler off: the
recording forward, the no-grad forward (`forward_nograd_seconds`) and the
backward apart, under the autocast and dtype in force at the call.

With `menu`, each stage's F_all is measured again under selective
checkpointing policies (`remat_torch.policies`), the same way: what the
recording forward leaves (the option's `saved_bytes`) and its transient,
B^ℓ's peak (o_b, recomputation included) and time; stages that run the
same computation on the same shapes are measured once.
"""

from __future__ import annotations

import contextlib
import statistics
import time
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch
from torch import nn

from .batch import describe as describe_inputs
from .batch import device_of, leaves
from . import calibration
from .measure import Meter, TrainingState, storage_bytes
from .compiled import MENU_BUDGETS, CompiledProgram, budget_of, compile_budget, compiled_program, policy_name
from .policies import POLICIES, check_policies, run_option
from .rng import current as current_rng
from .rng import restore as restore_rng
from .records import Entry, backward_handing_over
from .step_inputs import (StepInputs, booked_outside, fixed_tensors, foreign_storages, needs_input_gradient,
                          owned)
from .staging import StagedProgram, StagingError, fingerprint, getattr_path, make_program, model_loss, running_on


class _Pipeline:
    """Runs a program's stages one by one, the way the runtime does."""

    def __init__(self, program, batch, target, device) -> None:
        self.program = program
        self.device = device
        self.consts = program.constants(batch, target)
        self.first = program.first_input(batch)
        self.input_gradient = (
            self.first is not None and needs_input_gradient(program.modules[0], self.first)
        )
        self.anchor = torch.zeros((), device=device, requires_grad=True)
        fixed = fixed_tensors(program)
        self.foreign = foreign_storages(fixed, self.consts)
        self.inputs = StepInputs(program, batch, target, self.consts, fixed)

    def forward_nograd(self, l: int, inp) -> torch.Tensor:
        with torch.no_grad():
            return owned(self.program.run(l, inp, self.consts), inp, self.foreign)

    def forward_recording(self, l: int, inp, box: list, policy: Optional[str] = None,
                          outside: Callable = contextlib.nullcontext) -> torch.Tensor:
        """F_all^ℓ as the runtime runs it: the classic one, or under a menu
        option's `policy` (`outside`: the measurement's `Meter.outside`)."""
        if inp is None:
            x = None
        elif l > 1 or self.input_gradient:
            x = Entry.apply(inp.detach(), self.anchor, box)
        else:
            x = inp.detach()

        def stage(*h: torch.Tensor) -> torch.Tensor:
            y = h[0] if h else None
            return owned(self.program.run(l, y, self.consts), y, self.foreign)

        with torch.enable_grad():
            if policy is None:
                return stage(*(() if x is None else (x,)))
            budget = budget_of(policy)
            if budget is not None:
                # The stage compiled at another partitioner budget: autograd
                # keeps what that graph saves (`remat_torch.compiled`).
                return owned(self.program.run(l, x, self.consts, budget=budget), x, self.foreign)
            return run_option(policy, stage, () if x is None else (x,), device=self.device,
                              buffers=self.program.buffers(l), outside=outside)


def _agrees(got: torch.Tensor, want: torch.Tensor, exact: bool) -> bool:
    """Bit for bit on the CPU, where PyTorch's kernels are deterministic. On
    a GPU, atomics make the model's own backward differ from itself in the
    last bits (an embedding's gradient, a convolution's weight gradient:
    2.6e-9 … 4.7e-7 on an H200), so there the check is to 1e-4 of the
    tensor's largest magnitude."""
    if exact:
        return torch.equal(got, want)
    scale = float(want.abs().max()) if want.numel() else 0.0
    return got.shape == want.shape and bool(torch.allclose(got, want, rtol=1e-4, atol=1e-4 * scale + 1e-12))


def _verify(program: StagedProgram, model: nn.Module, loss: Callable, batch, target, state: TrainingState,
            device, paths: str = "eager") -> None:
    """The found stages against the model's own step, bit for bit (on the
    CPU; `_agrees`), the step run on the path the stages captured
    (`staging.running_on`)."""
    state.reset()
    with running_on(paths):
        expected = model_loss(model, loss, batch, target)
        expected.backward()
    want = {id(p): (None if p.grad is None else p.grad.clone()) for p in state.params}
    state.reset()
    pipe = _Pipeline(program, batch, target, device)
    outs: List[torch.Tensor] = []
    boxes: List[list] = []
    h = pipe.first
    for l in range(1, len(program) + 1):
        box: list = []
        y = pipe.forward_recording(l, h, box)
        outs.append(y)
        boxes.append(box)
        h = y
    got_loss = outs[-1].detach().clone()
    delta: Optional[torch.Tensor] = None
    for l in range(len(program), 0, -1):
        backward_handing_over([outs.pop()], [] if delta is None else [delta])
        box = boxes.pop()
        delta = box[0] if box else None
    exact = device.type == "cpu"
    if not _agrees(got_loss, expected.detach(), exact):
        raise StagingError(
            f"the found stages compute another loss than the model: {got_loss.item()!r} vs "
            f"{expected.item()!r}; pass the stages yourself"
        )
    for l in range(1, len(program) + 1):
        for p in program.parameters(l):
            a, b = want.get(id(p)), p.grad
            if (a is None) != (b is None) or (a is not None and not _agrees(b, a, exact)):
                diff = "one is missing" if a is None or b is None else (
                    f"max difference {float((a - b).abs().max()):.3g}"
                )
                raise StagingError(
                    f"stage {l} ({program.names[l - 1]}): its parameters' gradients differ from "
                    f"the model's own backward ({diff}); pass the stages yourself"
                )
    state.reset()


def describe_chain(
    model,
    batch,
    target: Any = None,
    name: Optional[str] = None,
    repeat: int = 3,
    bandwidth_bytes_per_s: Optional[float] = None,
    *,
    loss: Optional[Callable] = None,
    granularity: str = "block",
    merge: int = 1,
    join_glue: bool = False,
    loss_apart: bool = False,
    paths: str = "eager",
    check: bool = True,
    menu: Union[None, bool, Sequence[str]] = None,
    compile: Union[bool, float] = False,
    progress: Union[None, bool, Callable[[str, int, int], Any]] = None,
    set_to_none: bool = True,
    calibrate: bool = True,
) -> Dict[str, Any]:
    """The chain of `model` on `batch` as a `remat-chain/1` dict (write it
    with `json.dump` and give it to `remat solve`).

    `set_to_none` says how the training loop clears the parameter
    gradients, as its `zero_grad(set_to_none=...)`. True (the default, as
    PyTorch's): they do not exist when the step starts, each stage's
    backward creates its own and they stay to the step's end; the chain
    counts them (`parameter_gradient_bytes` per stage, in o_b while B^ℓ
    runs), so a plan's peak is the allocator's peak of the step above the
    weights, buffers and optimizer state. False: they live across steps with
    the weights, outside the chain; only the one in flight (allocated,
    added into `.grad`, freed) is in o_b. Measure a plan's step with the
    same value (`Checkpointed.measure_step`).

    `model` is any `nn.Module` and `loss(output, target)` the line the
    training loop has (`output` is whatever the model returns: a tensor, a
    transformers `ModelOutput`, a tuple); `batch` is its input, a tensor or a
    dict of keyword inputs. The stages are found (module docstring of
    `remat_torch.staging`; `granularity="fine"` for every cut, `merge=k` to
    join k blocks, `join_glue=True` to join the stem and head to the blocks
    beside them, `loss_apart=True` to keep the loss a stage of its own, run
    eagerly even over compiled stages, as `torch.compile(model)` runs it,
    `paths="compiled"` to capture the path the model's code takes under
    `torch.compile` where it asks, rather than eagerly: transformers' masks)
    and, with `check`, compared with the model's own step
    (StagingError naming the first stage that differs). Without `loss`,
    `model` is a list or `nn.Sequential` of stages, the last called as
    `stage(h, target)` and returning the loss.

    `menu=True` measures, for every stage, the selective-checkpointing
    policies of `remat_torch.policies.POLICIES` (`save_mm_attention`,
    `save_every_other_mm`, `save_attention`, `save_nothing`); a list of
    names measures those. Each becomes an entry of the stage's `menu`
    (docs/formats.md) when it keeps strictly less than the classic
    `saved_bytes` (otherwise it could never help a plan); a stage with no
    such entry gets no `menu`. Default: no menus.

    `compile=True` (or a partitioner budget b in [0, 1]) measures the stages
    run through `torch.compile` (inductor), each compiled alone
    (`remat_torch.compiled`), at budget 1.0 (or b); run the plan with
    `checkpointed(..., compile=` the same `)`. With it, `menu=True` measures
    the partitioner's own choices at the budgets of
    `remat_torch.compiled.MENU_BUDGETS` (`activation_memory_budget=b`); a
    list may name those and the policies above.

    `calibrate` (the default) also times whole steps — the plain step and
    the wrapper's store-all step, `repeat` interleaved rounds — and folds
    them into the stages' times (`remat_torch.calibration`): each time
    scaled to what a stage costs inside a step, and the wrapper's work per
    forward added, so that a plan's predicted time is what
    `checkpointed` takes. False: the stages' times alone.

    Runs a few forward and backward passes per stage; parameter `.grad`,
    buffers and the RNG state are left as they were. `progress` says what
    it is doing (`phase, done, total`, e.g. `"sizes", 3, 8`): to stderr
    when it is a terminal (None, the default), always (True), never
    (False), or to a function called with those three arguments; Ctrl-C
    stops it with nothing changed.
    """
    if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
        raise ValueError(f"repeat: expected a whole number ≥ 1, got {repeat!r}")
    budget = compile_budget(compile)
    if menu is None or menu is False:
        policies: List[str] = []
    elif menu is True:
        policies = list(POLICIES) if budget is None else [policy_name(b) for b in MENU_BUDGETS if b != budget]
    elif isinstance(menu, (list, tuple)):
        policies = check_policies(menu, "menu", compiled=budget is not None)
    else:
        raise ValueError(f"menu: expected True, None or a list of policy names ({', '.join(POLICIES)}), "
                         f"got {menu!r}")
    device = device_of(batch)
    report = _Progress(progress)
    program = make_program(model, batch, target, loss, granularity, merge, join_glue, loss_apart, paths)
    if isinstance(program, StagedProgram):
        # A stage of several blocks is a coarse chain: say why (issue 42).
        for why in program.staged.joined:
            warnings.warn(why, stacklevel=2)
    # Measured as the runtime will run the stages: eager, or compiled.
    run = program if budget is None else compiled_program(program, budget)
    params = list(program.all_parameters())
    state = TrainingState(params, list(program.all_buffers()), device)
    try:
        if check and isinstance(program, StagedProgram):
            report("checking the stages against the model's own step", 0, 1)
            _verify(program, program.staged.model, loss, batch, target, state, device, paths)
        # The stages were checked eager (a compiled graph is not bitwise
        # the eager one), then measured as the runtime will run them.
        stages, inputs, d0 = _measure(run, batch, target, device, params, state, repeat, policies, report,
                                      set_to_none)
        calibrated = _calibrate(stages, model, run, loss, batch, target, budget, state, device, repeat,
                                report) if calibrate else "stage times alone, not calibrated to whole steps"
    finally:
        state.restore()
        report.done()

    threads = torch.get_num_threads()
    how = (
        "torch.cuda memory statistics" if device.type == "cuda" else "the CPU allocator's events (torch.profiler)"
    )
    found = (
        "stages found by torch.export and checked against the model's own step"
        if isinstance(program, StagedProgram) and check
        else "stages found by torch.export" if isinstance(program, StagedProgram) else "stages given"
    )
    where = f"device={device.type}"
    if device.type == "cuda":
        where += f" ({torch.cuda.get_device_name(device)})"
    tensors = [t for t in leaves(batch) if isinstance(t, torch.Tensor)]
    size = f"batch {tensors[0].shape[0]}" if tensors and tensors[0].dim() else "batch ?"
    shapes = ", ".join(f"{i['name'] or 'input'} {i['dtype']} {i['shape']}" for i in describe_inputs(batch, target))
    chain: Dict[str, Any] = {
        "format": "remat-chain/1",
        "name": name or f"{type(model).__name__} (remat_torch)",
        "source": (
            f"measured by remat_torch.describe_chain: {type(model).__name__}, {size} ({shapes}); "
            f"{where}, {threads} threads, PyTorch {torch.__version__.split('+')[0]}, "
            f"{time.strftime('%Y-%m-%d')}; method: {found}; sizes are allocator deltas from {how}, "
            + ("parameter gradients inside from their creation by the stage's backward to the step's end "
               "(zero_grad(set_to_none=True)), " if set_to_none else
               "parameter gradients outside with the weights (zero_grad(set_to_none=False)) but a tied "
               "weight's, held from the later stage's backward to the step's end, ")
            + f"and the step constants ({inputs.constant_bytes} B: the "
            f"target and what stages after the first read) outside like the weights; "
            + (f"times: eager medians of {repeat} after a warm-up" if budget is None else
               f"stages compiled by torch.compile (inductor) one by one at activation_memory_budget={budget:g}, "
               f"times: medians of {repeat} after the compile")
            + f"; {calibrated}"
            + (
                f"; menus: {'selective-checkpointing policies' if budget is None else 'partitioner budgets'} "
                f"{', '.join(policies)} measured per stage "
                "the same way (identical stages once), kept where they save less than F_all"
                if policies else ""
            )
        ),
        "input_bytes": inputs.input_bytes,
        "input_gradient_bytes": d0,
        # What a budget in this chain's terms leaves out: another staging
        # of the model (a table two stages read is a step constant, inside
        # one stage it is that stage's) holds other constants.
        "constant_bytes": inputs.constant_bytes,
        "inputs": describe_inputs(batch, target),
        "model_fingerprint": fingerprint(run),
        "stages": stages,
    }
    if bandwidth_bytes_per_s is not None:
        chain["bandwidth_bytes_per_s"] = bandwidth_bytes_per_s
    return chain


def _calibrate(stages, model, run, loss, batch, target, budget, state: TrainingState, device, repeat: int,
               report) -> str:
    """Folds whole steps' times into `stages` (`remat_torch.calibration`);
    returns what the chain's `source` says of it."""
    plain = calibration.plain_step(run, loss, batch, target) if budget is None else None
    wrapper = calibration.wrapper_step(model, run, loss, batch, target, budget)
    steps = calibration.whole_steps(plain, wrapper, state.reset, lambda: calibration.sync(device), repeat, report)
    stage_sum = sum(st["forward_seconds"] + st["backward_seconds"] for st in stages)
    f = calibration.factors(stage_sum, steps["plain"], steps["wrapper"], len(stages))
    calibration.apply(stages, f["scale"], f["per_forward_seconds"])
    return calibration.source_words(f, steps["plain"], steps["wrapper"], repeat)


class _Progress:
    """`describe_chain`'s `progress`: called as `report(phase, done,
    total)` before each piece of work; `done()` at the end."""

    def __init__(self, progress) -> None:
        import sys

        self.stream = sys.stderr if progress is True or (progress is None and sys.stderr.isatty()) else None
        self.fn = progress if callable(progress) else None
        self.start = time.perf_counter()
        self.shown = False

    def __call__(self, phase: str, done: int, total: int) -> None:
        if self.fn is not None:
            self.fn(phase, done, total)
        if self.stream is not None:
            elapsed = time.perf_counter() - self.start
            self.stream.write(f"\rdescribe_chain: {phase}: {done} of {total} done ({elapsed:.0f} s)\033[K")
            self.stream.flush()
            self.shown = True

    def done(self) -> None:
        if self.stream is not None and self.shown:
            self.stream.write(f"\rdescribe_chain: done in {time.perf_counter() - self.start:.1f} s\033[K\n")
            self.stream.flush()


def _measure(program, batch, target, device, params, state: TrainingState, repeat: int,
             policies: Sequence[str] = (), report: Callable[[str, int, int], None] = lambda *_: None,
             set_to_none: bool = True):
    state.reset()
    pipe = _Pipeline(program, batch, target, device)
    n = len(program)
    compiled = isinstance(program, CompiledProgram)
    # set_to_none: every byte counts, the gradients a backward creates
    # included (they are the chain's, g^ℓ); otherwise they are booked
    # outside as autograd accumulates them, as a `.grad` that already
    # exists takes them in place — but for a tied weight's (`booked_outside`).
    outside = booked_outside(program, set_to_none)
    meter = Meter(device, outside)
    counted = {id(p) for p in params} - {id(p) for p in outside}
    # The inputs of every stage, from no-grad forwards.
    inputs: List[Optional[torch.Tensor]] = [pipe.first]
    for l in range(1, n):
        inputs.append(pipe.forward_nograd(l, inputs[-1]))

    def backward_sweep(record: Optional[Dict[int, Dict[str, int]]]) -> Dict[int, torch.Tensor]:
        """F_all^ℓ then B^ℓ for ℓ = L … 1, δ^ℓ the gradient B^{ℓ+1} made;
        measured when `record` is given. Returns the δ^ℓ used — only when
        not measuring: a δ^ℓ kept here would stay alive through B^ℓ, where a
        plain step frees it after its last reader (on VGG's conv stages
        o_b then read one δ^ℓ too large)."""
        deltas: Dict[int, torch.Tensor] = {}
        delta: Optional[torch.Tensor] = None
        for l in range(n, 0, -1):
            inp = inputs[l - 1]
            row: Dict[str, int] = {}
            report("sizes" if record is not None else "warming up" + (" (and compiling)" if compiled else ""),
                   n - l, n)
            if record is not None:
                keep: list = []
                _, net, peak = meter.measure(lambda: keep.append(pipe.forward_nograd(l, inp)))
                row["output_bytes"], row["nograd_transient"] = net, peak - net
                keep.clear()
            box: list = []
            out: list = []
            if record is None:
                out.append(pipe.forward_recording(l, inp, box))
            else:
                _, net, peak = meter.measure(lambda: out.append(pipe.forward_recording(l, inp, box)))
                row["saved_bytes"], row["recording_transient"] = net, peak - net
            if delta is not None:
                if record is None:
                    deltas[l] = delta
                row["gradient_bytes"] = storage_bytes([delta])
            else:
                row["gradient_bytes"] = storage_bytes(out)
            dbox = [] if delta is None else [delta]
            delta = None
            if record is None:
                backward_handing_over(out, dbox)
            else:
                # g^ℓ: the gradients this backward creates (a weight tied to
                # a later stage has its `.grad` already: only its transient).
                fresh = [p for p in program.parameters(l) if p.grad is None and id(p) in counted]
                _, _, peak = meter.measure(lambda: backward_handing_over(out, dbox))
                row["backward_peak"] = peak
                row["parameter_gradient_bytes"] = storage_bytes(p.grad for p in fresh if p.grad is not None)
            delta = box[0] if box else None
            if record is not None:
                row["input_gradient_bytes"] = 0 if delta is None else storage_bytes([delta])
                record[l] = row
            box.clear()
        return deltas

    # Warm-up: first calls allocate caches, pick kernels; its δ^ℓ (the
    # same shapes) serve the timing loop below.
    deltas = backward_sweep(None)
    state.reset()
    rows: Dict[int, Dict[str, int]] = {}
    backward_sweep(rows)
    state.reset()

    # Compiled at a budget below 1.0, every F_all runs the partitioner's
    # choice at that budget: it must train on the gradients budget 1.0's
    # graph computes (at low budgets the partitioner recomputes dropout
    # with a new draw), or no plan on this chain may run.
    budget = getattr(program, "budget", None)
    below_one = budget is not None and budget != 1.0
    reps = _representatives(program, inputs, pipe.consts) if policies or below_one else {}
    if below_one:
        wrong = _wrong_gradients(pipe, inputs, deltas, policy_name(1.0), sorted(set(reps.values())), device)
        state.reset()
        if wrong:
            where = "; ".join(f"stage {l} ({program.names[l - 1]}): {why}" for l, why in wrong.items())
            raise ValueError(
                f"compile: at activation_memory_budget={budget:g} the compiled stages' backward gives other "
                f"gradients than at 1.0 — {where}. At low budgets torch.compile's partitioner recomputes random "
                "ops (dropout) with a new draw (PyTorch's bug #190758); where the stage has none, the two graphs' "
                "float32 rounding differs by this much: describe at a higher budget (compile=True is 1.0)")

    # The menus: each policy's F_all and B measured as above, on one stage
    # of each kind (`_representatives`).
    measured = sorted(set(reps.values()))
    option_rows: Dict[Tuple[int, str], Dict[str, int]] = {}
    runnable: List[str] = []
    wrong_at: Dict[Tuple[int, str], str] = {}
    for i, name in enumerate(policies):
        report(f"menu option {name}", i, len(policies))
        try:
            _option_sweep(pipe, meter, inputs, name, set(measured), None)  # warm-up
            state.reset()
            wrong = _wrong_gradients(pipe, inputs, deltas, name, measured, device)
            if wrong:
                where = "; ".join(f"stage {l} ({program.names[l - 1]}): {why}" for l, why in wrong.items())
                warnings.warn(
                    f"menu: {name} left out of the menus of the stages where its backward gives other gradients "
                    f"than the stage's own graph — {where}. At low budgets torch.compile's partitioner recomputes "
                    "random ops (dropout) with a new draw (PyTorch's bug #190758), and a plan running it would "
                    "train on wrong gradients; where the stage has none, the two graphs' float32 rounding "
                    "differs by this much, and the option is left out all the same", stacklevel=3)
                wrong_at.update(((l, name), why) for l, why in wrong.items())
            state.reset()
            _option_sweep(pipe, meter, inputs, name, set(measured), option_rows)
            runnable.append(name)
        except RuntimeError as e:
            # Selective checkpointing refuses some programs (a kept output
            # modified in place later in the stage); the plan can do
            # without this option.
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            warnings.warn(f"menu: policy {name} could not run on this model ({first}); left out of the menus",
                          stacklevel=3)
        state.reset()

    # ι^ℓ: a^{ℓ-1} is dropped as B^ℓ starts when no graph reads it — not
    # stage ℓ's under any option it may run, nor stage ℓ-1's, of which it
    # is the output (a loss's logits). Checked on the stages themselves.
    freed = _inputs_freed(pipe, inputs, runnable, wrong_at)
    state.reset()

    # Times, the profiler off: each op of each stage, `repeat` times.
    times: Dict[int, Dict[str, List[float]]] = {l: {"f": [], "n": [], "b": []} for l in range(1, n + 1)}
    option_times: Dict[Tuple[int, str], List[float]] = {}
    for r in range(repeat):
        for l in range(n, 0, -1):
            report("times", r * n + n - l, repeat * n)
            inp = inputs[l - 1]
            calibration.sync(device)
            t0 = time.perf_counter()
            y = pipe.forward_nograd(l, inp)
            calibration.sync(device)
            times[l]["n"].append(time.perf_counter() - t0)
            del y
            box: list = []
            t0 = time.perf_counter()
            out = [pipe.forward_recording(l, inp, box)]
            calibration.sync(device)
            t1 = time.perf_counter()
            for p in program.parameters(l):
                p.grad = None
            d = deltas.get(l)
            backward_handing_over(out, [] if d is None else [d])
            calibration.sync(device)
            times[l]["b"].append(time.perf_counter() - t1)
            times[l]["f"].append(t1 - t0)
            box.clear()
            # Each option's F_all^ℓ and B^ℓ right after the classic ones, so
            # that both see the machine in the same state (the option's
            # extra time is their difference). Both: under a selective
            # checkpoint context the forward costs more too (every op
            # passes the policy's dispatch mode: on a GPT-2 block on the
            # CPU, as much as the recomputation it saves).
            for name in runnable if l in measured else ():
                box = []
                t0 = time.perf_counter()
                out = [pipe.forward_recording(l, inp, box, name)]
                calibration.sync(device)
                for p in program.parameters(l):
                    p.grad = None
                backward_handing_over(out, [] if d is None else [d])
                calibration.sync(device)
                option_times.setdefault((l, name), []).append(time.perf_counter() - t0)
                box.clear()
        state.reset()

    stages = []
    for l in range(1, n + 1):
        r = rows[l]
        d_prev = r["input_gradient_bytes"]
        out_b = r["output_bytes"]
        saved = max(r["saved_bytes"], out_b)
        stage: Dict[str, Any] = {
            "name": program.names[l - 1],
            "forward_seconds": statistics.median(times[l]["f"]),
            "forward_nograd_seconds": statistics.median(times[l]["n"]),
            "backward_seconds": statistics.median(times[l]["b"]),
            "output_bytes": out_b,
            "saved_bytes": saved,
        }
        module = program.module_names[l - 1]
        if module:
            stage["module"] = module
        # Which weights the stage reads, by name: `module` may name a whole
        # parent the stage runs a part of (a classifier cut in two), which
        # would make its weights look shared with the next stage.
        parameters = program.parameter_names(l)
        if parameters:
            stage["parameters"] = parameters
        if r["gradient_bytes"] != out_b:
            stage["gradient_bytes"] = r["gradient_bytes"]
        # F_all's transient and F_ck/F_∅'s apart: without autograd PyTorch
        # may pick other kernels (a GPT-2 block's attention: 0.14 MB
        # recording, 2.1 MB no-grad on the CPU).
        o_f = max(0, r["recording_transient"])
        o_f_nograd = max(0, r["nograd_transient"])
        if o_f:
            stage["forward_overhead_bytes"] = o_f
        if o_f_nograd != o_f:
            stage["forward_nograd_overhead_bytes"] = o_f_nograd
        g = r["parameter_gradient_bytes"]
        if g:
            stage["parameter_gradient_bytes"] = g
        # B^ℓ frees at most δ^ℓ and ā^ℓ and keeps g^ℓ: the bound a chain
        # must meet, which the measured sizes (ā^ℓ raised to a^ℓ above)
        # can miss by a few bytes.
        least = g - r["gradient_bytes"] - saved
        o_b = max(r["backward_peak"] - d_prev, least)
        if o_b:
            stage["backward_overhead_bytes"] = o_b
        entries = []
        for name in runnable:
            # Measured on the first stage of this kind, in the same
            # conventions as the classic numbers above.
            rep_l = reps[l]
            if (rep_l, name) in wrong_at:
                continue
            row = option_rows[(rep_l, name)]
            kept = max(row["saved_bytes"], out_b)
            if kept >= saved:
                continue  # keeps as much as F_all: never a better choice
            # F_all^ℓ[k] then B^ℓ over F_all^ℓ then B^ℓ, booked on B^ℓ: a
            # persistent schedule runs each F_all^ℓ once and its B^ℓ once,
            # so a step's time is the same (the timeline draws the forward's
            # share in the backward).
            classic = [f + b for f, b in zip(times[rep_l]["f"], times[rep_l]["b"])]
            extra = statistics.median(option_times[(rep_l, name)]) - statistics.median(classic)
            entries.append({
                "policy": name,
                "saved_bytes": kept,
                "backward_extra_seconds": max(0.0, extra),
                "backward_overhead_bytes": max(row["backward_peak"] - rows[rep_l]["input_gradient_bytes"],
                                               g - r["gradient_bytes"] - kept),
                "forward_overhead_bytes": max(0, row["recording_transient"]),
            })
        if entries:
            stage["menu"] = entries
        if l in freed:
            # The whole a^{ℓ-1}, but no more than B^ℓ leaves of δ^ℓ and ā^ℓ
            # under any option (the chain's books keep a^{ℓ-1} whole after
            # B^ℓ: `Chain::validate`). The same room as remat-core's
            # `Stage::backward_room`: o_b + δ^ℓ + ā^ℓ − g^ℓ per option.
            delta = stage.get("gradient_bytes", out_b)
            room = min(o.get("backward_overhead_bytes", 0) + delta + o["saved_bytes"] - g
                       for o in [stage, *entries])
            iota = min(stages[l - 2]["output_bytes"], max(0, room))
            if iota:
                stage["input_freed_bytes"] = iota
        stages.append(stage)
    d0 = rows[1]["input_gradient_bytes"]
    return stages, pipe.inputs, d0


def _inputs_freed(pipe: _Pipeline, inputs: List[Optional[torch.Tensor]], policies: Sequence[str],
                  wrong_at: Dict[Tuple[int, str], str]) -> set:
    """The stages ℓ ≥ 2 whose input a^{ℓ-1} no graph reads once F^ℓ has run
    (the chain's ι^ℓ, `input_freed_bytes`): B^ℓ's under the classic F_all
    and every menu option, and B^{ℓ-1}'s, which has a^{ℓ-1} for output.
    Each F_all runs on a copy of its input, its output and the copy then
    let go with the graph alive: a storage still alive is read. An option
    that does not run on a stage reads, as far as this knows."""
    n = len(pipe.program)
    reads: Dict[Tuple[int, Optional[str]], Tuple[bool, bool]] = {}

    def holds(l: int, policy: Optional[str]) -> Tuple[bool, bool]:
        from torch.multiprocessing.reductions import StorageWeakRef

        if policy is not None and (l, policy) in wrong_at:
            return False, False  # never in stage ℓ's menu
        copy = None if inputs[l - 1] is None else inputs[l - 1].clone()
        try:
            out = pipe.forward_recording(l, copy, [], policy)
        except RuntimeError:
            return True, True
        graph = out.grad_fn
        if graph is None:
            return True, True
        seen_in = None if copy is None else StorageWeakRef(copy.untyped_storage())
        seen_out = StorageWeakRef(out.untyped_storage())
        del copy, out
        result = seen_in is None or not seen_in.expired(), not seen_out.expired()
        del graph
        return result

    def either(l: int, which: int) -> bool:
        # One F_all per (stage, option) answers both questions, stage ℓ's
        # graph reads its input (for ι^ℓ) and its output (for ι^{ℓ+1}):
        # each pair is kept, and `any` stops at the first that reads.
        def answer(p: Optional[str]) -> bool:
            if (l, p) not in reads:
                reads[(l, p)] = holds(l, p)
            return reads[(l, p)][which]

        return any(answer(p) for p in (None, *policies))

    return {
        l for l in range(2, n + 1)
        if inputs[l - 1] is not None and not either(l, 0) and not either(l - 1, 1)
    }


def _option_sweep(pipe: _Pipeline, meter: Meter, inputs: List[Optional[torch.Tensor]], policy: str,
                  measured: set, record: Optional[Dict[Tuple[int, str], Dict[str, int]]]) -> None:
    """F_all^ℓ then B^ℓ for ℓ = L … 1, as `_measure`'s backward sweep, with
    the stages in `measured` run under `policy` (and measured when `record`
    is given: what the recording forward leaves and its transient, B^ℓ's
    peak); the others run the classic F_all, only to hand δ^{ℓ-1} down.
    δ^ℓ is handed over to B^ℓ as in a step, freed after its last reader."""
    delta: Optional[torch.Tensor] = None
    for l in range(len(pipe.program), 0, -1):
        inp = inputs[l - 1]
        mine = l in measured
        box: list = []
        out: list = []
        dbox = [] if delta is None else [delta]
        delta = None
        if record is None or not mine:
            out.append(pipe.forward_recording(l, inp, box, policy if mine else None))
            backward_handing_over(out, dbox)
        else:
            def step(boundary) -> None:
                out.append(pipe.forward_recording(l, inp, box, policy, meter.outside))
                boundary()
                backward_handing_over(out, dbox)
                boundary()

            # F_all and B in one watch, split at the boundary: the same
            # figures as two `measure` calls (B's peak taken above what F_all
            # left), at half the garbage collections (a collection of this
            # process's heap before each watch costs ~0.2 s on the
            # 2-core machine with transformers imported).
            _, ((net, forward_peak), (_, backward_peak)) = meter.measure_ops(step)
            record[(l, policy)] = {
                "saved_bytes": net,
                "recording_transient": forward_peak - net,
                "backward_peak": backward_peak - net,
            }
        delta = box[0] if box else None
        box.clear()


def _wrong_gradients(pipe: _Pipeline, inputs: List[Optional[torch.Tensor]], deltas: Dict[int, torch.Tensor],
                     policy: str, measured: Sequence[int], device: torch.device) -> Dict[int, str]:
    """The measured stages where an option over compiled stages computes
    other gradients than the stage's F_all, each with what differs: on each measured
    stage, F_all^ℓ then B^ℓ from one RNG state, classic and under the
    option, the parameters' gradients and δ^{ℓ-1} compared to 1e-4 of their
    largest magnitude (graphs compiled at two budgets fuse differently, so
    not bit for bit). Only options naming a partitioner budget are checked:
    at low budgets torch.compile's partitioner recomputes dropout in the
    backward with a new draw (torch 2.13, inductor, CPU: a dropout's
    gradient 85.3 instead of 25.2 at budget 0), and a plan running that
    graph would train on wrong gradients. Selective-checkpointing policies
    replay the forward's RNG state (`remat_torch.policies`) and are held
    bitwise by the tests."""
    wrong: Dict[int, str] = {}
    if budget_of(policy) is None:
        return wrong
    rng = current_rng(device)

    def gradients(l: int, option: Optional[str]) -> List[torch.Tensor]:
        restore_rng(*rng, device)
        params = pipe.program.parameters(l)
        for p in params:
            p.grad = None
        box: list = []
        out = [pipe.forward_recording(l, inputs[l - 1], box, option)]
        d = deltas.get(l)
        backward_handing_over(out, [] if d is None else [d.clone()])
        got = [torch.zeros(()) if p.grad is None else p.grad for p in params] + box[:1]
        for p in params:
            p.grad = None
        return got

    try:
        for l in measured:
            want, got = gradients(l, None), gradients(l, policy)
            for i, (a, b) in enumerate(zip(got, want)):
                if not _agrees(a, b, exact=False):
                    what = f"δ^{l - 1}" if i == len(pipe.program.parameters(l)) else "parameter gradient"
                    scale = float(b.abs().max()) or 1.0
                    wrong[l] = f"a {what} off by {float((a - b).abs().max()) / scale:.2g} of its largest value"
                    break
    finally:
        restore_rng(*rng, device)
    return wrong


def _representatives(program, inputs: List[Optional[torch.Tensor]], consts: Sequence) -> Dict[int, int]:
    """Stage ℓ → the first stage that runs the same computation on tensors
    of the same shapes (its menu is measured once, there): GPT-2's blocks,
    ResNet's identical bottlenecks. A found stage is compared by its graph
    (every operation and its arguments, each parameter's shape), a given
    module by its class, its printed structure and its parameters' and
    buffers' shapes; both with the input's and step constants' shapes."""
    n = len(program)
    first: Dict[Any, int] = {}
    out: Dict[int, int] = {}
    for l in range(1, n + 1):
        key = (_stage_key(program, l, consts), _tensor_key(inputs[l - 1]), l == 1, l == n)
        out[l] = first.setdefault(key, l)
    return out


def _tensor_key(t) -> Any:
    if not isinstance(t, torch.Tensor):
        return repr(t) if t is not None else None
    return (tuple(t.shape), t.stride(), t.dtype, str(t.device), t.requires_grad)


def _stage_key(program, l: int, consts: Sequence) -> Any:
    if isinstance(program, CompiledProgram):
        program = program.inner  # its stages are its inner program's
    if isinstance(program, StagedProgram):
        stage = program.staged.stages[l - 1]
        gm = stage.module
        index: Dict[Any, int] = {}
        nodes = []

        def canon(a):
            if isinstance(a, torch.fx.Node):
                return ("node", index[a])
            if isinstance(a, (list, tuple)):
                return tuple(canon(b) for b in a)
            if isinstance(a, dict):
                return tuple(sorted((k, canon(v)) for k, v in a.items()))
            return repr(a)

        for i, node in enumerate(gm.graph.nodes):
            index[node] = i
            if node.op == "get_attr":
                # Parameters are named by their module (`h.0` vs `h.1`):
                # compared by what they are, not by name.
                nodes.append(("attr", _tensor_key(getattr_path(gm, node.target))))
            elif node.op == "placeholder":
                nodes.append(("input",))
            else:
                nodes.append((node.op, str(node.target), canon(node.args), canon(node.kwargs)))
        return ("graph", tuple(nodes), tuple(_tensor_key(consts[i]) for i in stage.constants))
    m = program.modules[l - 1]
    shapes = tuple(_tensor_key(t) for t in [*m.parameters(), *m.buffers()])
    return ("module", type(m).__module__, type(m).__qualname__, repr(m), shapes)
