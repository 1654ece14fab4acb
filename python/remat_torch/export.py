"""A Remat plan applied to the user's own model object with stock PyTorch.

`remat export SCHEDULE --to pytorch|transformers --chain CHAIN --json`
lowers a schedule to what PyTorch (or transformers) runs by itself, and
judges that form with the simulator (docs/pytorch.md, "Exporting a plan to
stock PyTorch / transformers"). This module applies it:

    plan = remat_torch.export_plan("plan.json", "chain.json")          # or the --json output
    applied = remat_torch.apply_plan(model, plan, batch)
    loss = loss_fn(model(batch), target); loss.backward()              # the user's own step
    applied.remove()                                                   # the model as it was

* `--to pytorch`: nested `torch.utils.checkpoint.checkpoint(fn, x,
  use_reentrant=False, early_stop=False, context_fn=…)` over ranges of
  consecutive stages. The model is not rebuilt: the first module of a
  region's first stage gets a `forward` that runs the whole range under
  checkpoint, and the other modules of the range a `forward` that passes
  the region's output on, so the model's own forward (its loop, its
  Sequential) drives the plan. A range is wrapped only where one example
  forward shows the model calling the range's modules as a chain (each
  one's first argument is the previous one's output, the other arguments
  the same objects, every output a tensor); otherwise the plan is lowered
  to per-module wrappers of the stages it recomputes (`form="one-stage"`),
  whose predicted peak and time the export gives.
* Menu options (`"policies"` in the export: a stage whose F_all runs a
  selective-checkpointing policy and that no region recomputes): the
  stage's one module runs under `checkpoint(..., use_reentrant=False,
  context_fn=<the policy's contexts>)` (`remat_torch.policies`), in the
  plan's form and its one-stage form; the other forms are baselines
  without them.
* `--to transformers`: the per-layer `gradient_checkpointing` switches of
  the decoder layers (`GradientCheckpointingLayer`), with
  `use_reentrant=False, early_stop=False`.

**BatchNorm** stays exact: each checkpoint's recomputation runs inside a
context (`context_fn`) that snapshots the running statistics of the
BatchNorm layers of its range (`running_mean`, `running_var`,
`num_batches_tracked`) and restores them afterwards, so they receive one
update per step, from the first forward, as in a plain step; under nesting
the outer region's snapshot covers its whole range. The RNG is
`checkpoint`'s own (`preserve_rng_state`): dropout draws the same masks.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import subprocess
import threading
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint, set_checkpoint_early_stop



def _checkpoint(fn, *args, context_fn, **kwargs):
    """`checkpoint(fn, *args, use_reentrant=False, context_fn=…)` with early
    stop off (the whole region is recomputed, as the plan says). The
    context manager rather than the `early_stop` argument, which older
    PyTorch lacks: a checkpoint reads it when it starts, and a nested one
    started during its parent's recomputation runs inside this call too.

    Under `torch.compile` (torchtitan's order: checkpointing applied, then
    the model compiled) the checkpoint is traced as a higher-order op whose
    ops the partitioner marks for recomputation; early stop and our
    contexts are eager autograd's, and dynamo breaks the graph at
    `set_checkpoint_early_stop` (a skipped function) — on GPT-2 with three
    regions, 3 graphs instead of 1. So a compiled trace gets the plain
    checkpoint: the partitioner recomputes the region inside the backward,
    and a BatchNorm's running statistics, functionalized, are updated once
    by the forward graph."""
    if torch.compiler.is_compiling():
        return checkpoint(fn, *args, use_reentrant=False, **kwargs)
    with set_checkpoint_early_stop(False):
        return checkpoint(fn, *args, use_reentrant=False, context_fn=context_fn, **kwargs)


class ExportError(ValueError):
    """The plan cannot be applied to this model as asked (the message says
    which stage and why)."""


# --------------------------------------------------------------------------
# Getting a plan


def export_plan(schedule: Union[dict, str, Path], chain: Union[dict, str, Path], to: str = "pytorch",
                remat: Optional[str] = None, model: Optional[nn.Module] = None) -> dict:
    """Runs `remat export SCHEDULE --to TO --chain CHAIN --json` and returns
    its report (what `apply_plan` reads). `schedule` and `chain` are files
    or dicts (`describe_chain`'s). `remat` is the binary: default
    $REMAT_BIN, else `remat` on the PATH. With `model`, the parameters its
    stages share (tied weights) are passed as `--shared-gradient`, so the
    lowered forms' peaks count the gradient autograd holds for them
    (docs/pytorch.md). A schedule the stock form cannot express raises
    ExportError with the binary's message (it names the op)."""
    import tempfile

    binary = remat or os.environ.get("REMAT_BIN") or shutil.which("remat")
    if not binary:
        raise ExportError("no remat binary: pass remat=PATH, set $REMAT_BIN, or put remat on the PATH")
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, doc in (("schedule.json", schedule), ("chain.json", chain)):
            if isinstance(doc, dict):
                path = Path(tmp) / name
                path.write_text(json.dumps(doc))
                paths.append(str(path))
            else:
                paths.append(str(doc))
        args = [binary, "export", paths[0], "--to", to, "--chain", paths[1], "--json"]
        if model is not None:
            doc = chain if isinstance(chain, dict) else _chain_doc(paths[1])
            args += shared_gradient_args(model, doc)
        p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        raise ExportError(p.stderr.strip().removeprefix("error: "))
    return json.loads(p.stdout)


def _chain_doc(path: str) -> dict:
    if path.startswith("example:"):
        return {"stages": []}
    return json.loads(Path(path).read_text())


def shared_gradient_args(model: nn.Module, chain: dict) -> List[str]:
    """`remat export`'s `--shared-gradient FIRST:LAST:BYTES` arguments for
    the tied weights of `model` across the stages of `chain` (a chain
    document): what `export_plan(model=...)` passes, and what a user who
    runs `remat export` by hand passes too."""
    stages = chain["stages"]
    named = [s.get("parameters") for s in stages] if any("parameters" in s for s in stages) else None
    return [a for g in shared_gradients(model, [s.get("module") for s in stages], named)
            for a in ("--shared-gradient", f"{g['first']}:{g['last']}:{g['bytes']}")]


def shared_gradients(model: nn.Module, modules: Sequence[Optional[str]],
                     parameters: Optional[Sequence[Optional[Sequence[str]]]] = None) -> List[dict]:
    """The parameters that several stages use (tied weights), as
    `{"first", "last", "bytes"}`: stock PyTorch's one backward keeps the
    gradient B^last computes in autograd's buffer until B^first adds its
    own. `parameters` is each stage's `parameters` (the qualified names of
    the weights it reads, as `describe_chain` writes them); without it,
    `modules`, each stage's `module` (`+`-joined), names them — a guess
    where a stage runs part of the module it names (a classifier cut in
    two: its last layer's weight then looks shared)."""
    stages: Dict[int, List[int]] = {}
    params: Dict[int, nn.Parameter] = {}
    by_name = dict(model.named_parameters())

    def read(l: int, p: nn.Parameter) -> None:
        if p.requires_grad:
            params[id(p)] = p
            if l not in stages.setdefault(id(p), []):
                stages[id(p)].append(l)

    if parameters is not None:
        for l, names in enumerate(parameters, 1):
            for name in names or []:
                if name in by_name:
                    read(l, by_name[name])
    else:
        for l, name in enumerate(modules, 1):
            if not name:
                continue
            for part in name.split("+"):
                try:
                    mod = model.get_submodule(part)
                except AttributeError:
                    continue
                for p in mod.parameters():
                    read(l, p)
    out = []
    for key, ls in stages.items():
        if len(ls) > 1:
            p = params[key]
            out.append({"first": min(ls), "last": max(ls), "bytes": p.numel() * p.element_size()})
    return sorted(out, key=lambda g: (g["first"], g["last"], g["bytes"]))


def _load(plan: Union[dict, str, Path]) -> dict:
    if isinstance(plan, dict):
        return plan
    return json.loads(Path(plan).read_text())


# --------------------------------------------------------------------------
# What was applied


@dataclass
class Applied:
    """A plan applied to a model. `form` is the plan's form that runs
    (`regions`, `one-stage`, `switches`, or one named by `apply_plan(form=)`),
    `regions` its checkpoint regions (1-based stages, nested),
    `predicted` the simulator's `{"peak_bytes", "makespan_seconds", "fits"}`
    for that form, `fidelity` and `differences` what the export says of it
    against the plan, `note` why this form was chosen when it is not the
    one asked for, `policies` the stages run under a menu option's
    selective checkpoint (`{"stage", "option", "policy"}`). `remove()`
    gives the model its own forwards back."""

    form: str
    regions: List[dict]
    predicted: Dict[str, Any]
    fidelity: str
    differences: List[str]
    note: str = ""
    policies: List[dict] = field(default_factory=list)
    _undo: List[Callable[[], None]] = field(default_factory=list, repr=False)

    def remove(self) -> None:
        while self._undo:
            self._undo.pop()()


def _form(plan: dict, name: str) -> dict:
    for f in plan.get("forms", []):
        if f["form"] == name:
            return f
    raise ExportError(f"the plan has no form {name!r}; it has {[f['form'] for f in plan.get('forms', [])]}")


def _applied(plan: dict, name: str, note: str = "") -> Applied:
    f = _form(plan, name)
    lowered = plan["forms"][1]["form"] if len(plan.get("forms", [])) > 1 else None
    exact = name == lowered
    return Applied(
        form=name,
        regions=f["regions"],
        predicted={k: f[k] for k in ("peak_bytes", "makespan_seconds", "fits")},
        fidelity=plan["fidelity"] if exact else "differs",
        differences=list(plan["differences"]) if exact else [
            f"{f['label']} instead of the plan: predicted peak {f['peak_bytes']} B, "
            f"time {f['makespan_seconds']:.6g} s (plan: {plan['forms'][0]['peak_bytes']} B, "
            f"{plan['forms'][0]['makespan_seconds']:.6g} s)"],
        note=note,
    )


# --------------------------------------------------------------------------
# BatchNorm


def _norm_buffers(modules: Sequence[nn.Module]) -> List[torch.Tensor]:
    """The running statistics of every BatchNorm-like layer in `modules`
    (the buffers a training forward updates in place)."""
    seen, out = set(), []
    for m in modules:
        for sub in m.modules():
            if isinstance(sub, nn.modules.batchnorm._NormBase) and sub.track_running_stats:
                for b in (sub.running_mean, sub.running_var, sub.num_batches_tracked):
                    if b is not None and id(b) not in seen:
                        seen.add(id(b))
                        out.append(b)
    return out


class _Restore:
    """The recomputation's context: the buffers as they were on entry are
    put back on exit. Entered once per recomputation (a second backward
    through the same graph enters it again)."""

    def __init__(self, buffers: List[torch.Tensor]) -> None:
        self.buffers = buffers
        self.saved: Optional[List[torch.Tensor]] = None

    def __enter__(self) -> None:
        self.saved = [b.detach().clone() for b in self.buffers]

    def __exit__(self, *exc) -> None:
        with torch.no_grad():
            for b, old in zip(self.buffers, self.saved or []):
                b.copy_(old)
        self.saved = None


def _context_fn(buffers: List[torch.Tensor]) -> Callable[[], Tuple[Any, Any]]:
    if not buffers:
        return lambda: (contextlib.nullcontext(), contextlib.nullcontext())
    return lambda: (contextlib.nullcontext(), _Restore(buffers))


# --------------------------------------------------------------------------
# transformers


def _apply_switches(model: nn.Module, plan: dict) -> Applied:
    try:
        from transformers.modeling_layers import GradientCheckpointingLayer
    except ImportError as e:  # pragma: no cover - transformers is optional
        raise ExportError("--to transformers needs the transformers package") from e
    on: List[nn.Module] = []
    for layer in plan["layers"]:
        try:
            m = model.get_submodule(layer["module"])
        except AttributeError as e:
            raise ExportError(f"stage {layer['stage']}: the model has no module {layer['module']!r} "
                              "(the chain was described from another model)") from e
        if not isinstance(m, GradientCheckpointingLayer):
            raise ExportError(f"stage {layer['stage']} ({layer['module']}) is a {type(m).__name__}, not a "
                              "transformers GradientCheckpointingLayer: it has no per-layer switch; "
                              "export --to pytorch")
        if layer["gradient_checkpointing"]:
            on.append(m)
    kwargs = {"use_reentrant": False}
    enable = getattr(model, "activation_checkpointing_enable", None)
    if enable is not None:
        enable(activation_checkpointing_kwargs=kwargs)
        disable = model.activation_checkpointing_disable
    else:  # transformers before activation_checkpointing_enable
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
        disable = model.gradient_checkpointing_disable
    on_ids = {id(m) for m in on}
    for m in model.modules():
        if isinstance(m, GradientCheckpointingLayer):
            m.gradient_checkpointing = id(m) in on_ids
    # Each switched layer's own checkpoint function: early stop off, and its
    # BatchNorm statistics restored after the recomputation.
    for m in on:
        m._gradient_checkpointing_func = functools.partial(_checkpoint, context_fn=_context_fn(_norm_buffers([m])))
    applied = _applied(plan, "switches")
    applied._undo.append(disable)
    return applied


# --------------------------------------------------------------------------
# PyTorch: regions over stage ranges


class _Inside(threading.local):
    """How many region functions run on this thread: inside one, every
    wrapped module runs its own forward (the region calls it)."""

    depth = 0


_inside = _Inside()


@contextlib.contextmanager
def _running_region():
    _inside.depth += 1
    try:
        yield
    finally:
        _inside.depth -= 1


@dataclass
class _Call:
    args: tuple
    kwargs: dict
    output: Any


def _same(a, b) -> bool:
    """The same objects, element by element (a module's extra arguments)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(a[k] is b[k] for k in a)
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


class _Model:
    """The stages' modules and what one example forward shows of how the
    model calls them."""

    def __init__(self, model: nn.Module, plan: dict, last_stage_in_model: bool = False) -> None:
        self.model: Optional[nn.Module] = model  # for the probe only
        self.n = plan["stages"]
        # The stage whose output is the loss, which the training loop, not
        # the model, computes (its last); None for a pipeline's piece that
        # hands its last stage's output on (`last_stage_in_model`).
        self.loss_stage: Optional[int] = None if last_stage_in_model else self.n
        self.names: List[List[str]] = []
        self.modules: List[List[nn.Module]] = []
        for l, name in enumerate(plan["modules"], 1):
            if name is None:
                self.names.append([])
                self.modules.append([])
                continue
            names = name.split("+")
            mods = []
            for part in names:
                try:
                    mods.append(model.get_submodule(part))
                except AttributeError as e:
                    raise ExportError(f"stage {l}: the model has no module {part!r} "
                                      "(the chain was described from another model)") from e
            self.names.append(names)
            self.modules.append(mods)
        self.calls: Dict[int, List[_Call]] = {}

    def stage(self, l: int) -> List[nn.Module]:
        return [m() if isinstance(m, weakref.ref) else m for m in self.modules[l - 1]]

    def let_go(self) -> None:
        """Keeps only weak references to the modules: the wrappers the
        model holds reach this object, and a strong reference back would
        make a cycle that only the garbage collector frees (at any moment,
        a measured step included)."""
        self.model = None
        self.calls = {}
        self.modules = [[weakref.ref(m) for m in mods] for mods in self.modules]

    def label(self, l: int) -> str:
        return f"stage {l} ({'+'.join(self.names[l - 1]) or 'no module named'})"

    def probe(self, batch) -> None:
        """One forward without grad, every stage module's calls recorded;
        buffers and the RNG as they were afterwards."""
        handles, calls = [], {}
        for mods in self.modules:
            for m in mods:
                calls.setdefault(id(m), [])

                def hook(mod, args, kwargs, output, key=id(m)):
                    calls[key].append(_Call(args, kwargs, output))

                handles.append(m.register_forward_hook(hook, with_kwargs=True))
        buffers = [(b, b.detach().clone()) for b in self.model.buffers()]
        devices = [t.device for t in (batch.values() if isinstance(batch, dict) else [batch])
                   if isinstance(t, torch.Tensor) and t.device.type == "cuda"]
        try:
            with torch.random.fork_rng(devices=devices), torch.no_grad():
                self.model(**batch) if isinstance(batch, dict) else self.model(batch)
        finally:
            for h in handles:
                h.remove()
            with torch.no_grad():
                for b, old in buffers:
                    b.copy_(old)
        self.calls = calls

    def once(self, m: nn.Module) -> Optional[_Call]:
        c = self.calls.get(id(m), [])
        return c[0] if len(c) == 1 else None

    def why_not_range(self, first: int, last: int) -> Optional[str]:
        """None when the model calls the modules of stages first..last as a
        chain (a range region can run them), else why not."""
        if last == self.loss_stage:
            return f"{self.label(last)} computes the loss, outside the model"
        prev: Optional[_Call] = None
        extras = None
        for l in range(first, last + 1):
            if not self.modules[l - 1]:
                return f"{self.label(l)} names no module"
            for name, m in zip(self.names[l - 1], self.modules[l - 1]):
                c = self.once(m)
                if c is None:
                    n = len(self.calls.get(id(m), []))
                    return f"{name} (stage {l}) is called {n} times in one forward, not once"
                if not c.args or not isinstance(c.args[0], torch.Tensor) or not isinstance(c.output, torch.Tensor):
                    return f"{name} (stage {l}) does not take and return one tensor first"
                if prev is not None and c.args[0] is not prev.output:
                    return f"{name} (stage {l}) is not called on the output of the module before it"
                mine = (c.args[1:], c.kwargs)
                if extras is not None and not (_same(mine[0], extras[0]) and _same(mine[1], extras[1])):
                    return f"{name} (stage {l}) gets other arguments than {self.names[first - 1][0]}"
                extras = mine
                prev = c
        return None

    def why_not_alone(self, l: int) -> Optional[str]:
        """None when stage l can be checkpointed by a wrapper of its one
        module, else why not."""
        if l == self.loss_stage:
            return f"{self.label(l)} computes the loss, outside the model"
        if len(self.modules[l - 1]) != 1:
            return f"{self.label(l)} is not one module"
        n = len(self.calls.get(id(self.modules[l - 1][0]), []))
        return None if n == 1 else f"{self.label(l)} is called {n} times in one forward, not once"


def _region_buffers(mm: _Model, region: dict) -> List[torch.Tensor]:
    return _norm_buffers([m for l in range(region["first"], region["last"] + 1) for m in mm.stage(l)])


def _region_runner(mm: _Model, region: dict) -> Callable:
    """fn(x, rest, kwargs) for `checkpoint`: the stages of the region, its
    nested regions under checkpoint again, each module called with the
    chained tensor first and the region's extra arguments."""
    inner = {r["first"]: (r, _region_runner(mm, r), _context_fn(_region_buffers(mm, r)))
             for r in region["regions"]}

    def run(x, rest, kwargs):
        with _running_region():
            l = region["first"]
            while l <= region["last"]:
                if l in inner:
                    r, fn, ctx = inner[l]
                    x = _checkpoint(fn, x, rest, kwargs, context_fn=ctx)
                    l = r["last"] + 1
                else:
                    for m in mm.stage(l):
                        x = m(x, *rest, **kwargs)
                    l += 1
            return x

    return run


def _own_forward(m: nn.Module) -> Callable:
    """The module's forward as it is now, without a strong reference to the
    module (the override that calls it is stored on the module)."""
    if "forward" in m.__dict__:
        return m.__dict__["forward"]
    ref, cls = weakref.ref(m), type(m)
    return lambda *args, **kwargs: cls.forward(ref(), *args, **kwargs)


def _override(m: nn.Module, forward: Callable, undo: List[Callable[[], None]]) -> None:
    had = "forward" in m.__dict__
    old = m.__dict__.get("forward")
    m.forward = forward

    def restore() -> None:
        if had:
            m.forward = old
        else:
            del m.forward

    undo.append(restore)


def _install_region(mm: _Model, region: dict, undo: List[Callable[[], None]]) -> None:
    run = _region_runner(mm, region)
    ctx = _context_fn(_region_buffers(mm, region))
    mods = [m for l in range(region["first"], region["last"] + 1) for m in mm.stage(l)]
    head = mods[0]
    own = _own_forward(head)

    def wrapper(*args, **kwargs):
        if _inside.depth:
            return own(*args, **kwargs)
        return _checkpoint(run, args[0], args[1:], kwargs, context_fn=ctx)

    _override(head, wrapper, undo)
    for m in mods[1:]:
        theirs = _own_forward(m)

        def passthrough(*args, _theirs=theirs, **kwargs):
            if _inside.depth:
                return _theirs(*args, **kwargs)
            return args[0]

        _override(m, passthrough, undo)


def _install_alone(mm: _Model, l: int, undo: List[Callable[[], None]]) -> None:
    (m,) = mm.stage(l)
    own = _own_forward(m)
    ctx = _context_fn(_norm_buffers([m]))

    def wrapper(*args, **kwargs):
        if _inside.depth:
            return own(*args, **kwargs)
        return _checkpoint(own, *args, context_fn=ctx, **kwargs)

    _override(m, wrapper, undo)


def _install_policy(mm: _Model, l: int, policy: str, undo: List[Callable[[], None]]) -> None:
    """Stage l's one module run under a menu option's selective checkpoint
    (`remat_torch.policies`), as `checkpointed` runs F_all^ℓ with that
    option: what the policy keeps stays, B recomputes the rest."""
    from .policies import run_option

    (m,) = mm.stage(l)
    own = _own_forward(m)
    buffers = _norm_buffers([m])

    def wrapper(*args, **kwargs):
        # Without grad nothing is saved; under capture (torch.export, which
        # `find_stages` runs on the model) the tensors are fake and the
        # policy is a matter of memory, not of the computation.
        if _inside.depth or not torch.is_grad_enabled() or torch.compiler.is_compiling():
            return own(*args, **kwargs)
        device = next((a.device for a in args if isinstance(a, torch.Tensor)), torch.device("cpu"))
        return run_option(policy, own, args, kwargs=kwargs, device=device, buffers=buffers)

    _override(m, wrapper, undo)


def _policy_problems(mm: _Model, policies: List[dict]) -> List[str]:
    """Why a stage whose F_all the plan runs under a policy cannot carry it
    (the export lists such stages only where no region recomputes them; the
    wrapper needs the stage to be one module called once)."""
    from .policies import POLICIES

    out = []
    for p in policies:
        why = mm.why_not_alone(p["stage"])
        if p["policy"] not in POLICIES:
            why = f"remat_torch runs {', '.join(POLICIES)}"
        if why is not None:
            out.append(f"stage {p['stage']}'s policy {p['policy']} (option {p['option']}) cannot be "
                       f"applied: {why}")
    return out


def _alone(mm: _Model, r: dict) -> bool:
    """A region of one stage of one module, nothing nested: a per-module
    wrapper (any call signature)."""
    return r["first"] == r["last"] and not r["regions"] and len(mm.stage(r["first"])) == 1


def _problems(mm: _Model, regions: List[dict]) -> List[str]:
    """Why each top-level region cannot be installed (nested regions run
    inside their parent's function: its range covers them)."""
    out = []
    for r in regions:
        why = mm.why_not_alone(r["first"]) if _alone(mm, r) else mm.why_not_range(r["first"], r["last"])
        if why is not None:
            out.append(why)
    return out


def apply_plan(model: nn.Module, plan: Union[dict, str, Path], batch: Any = None, *,
               form: Optional[str] = None, last_stage_in_model: bool = False) -> Applied:
    """Applies an exported plan (`remat export … --to pytorch|transformers
    --json`, a dict or a file; see `export_plan`) to `model` in place, with
    stock PyTorch, and returns what was applied (`Applied`: the form, its
    predicted peak and time, `remove()`).

    `--to pytorch` needs `batch`, the model's input as in training (a
    tensor, or a dict passed as `model(**batch)`): one forward without grad
    shows how the model calls each stage's modules (buffers and RNG are
    restored after it). The plan's nested regions are applied where the
    model calls each range's modules as a chain; otherwise the one-stage
    form (per-module wrappers of the stages the plan recomputes), and
    `Applied.note` says why. `form` names one of the plan's forms to apply
    instead (`regions`, `one-stage`, `every-stage`, `checkpoint_sequential`,
    `store-all`; for transformers `switches`, `every-layer`): it is applied
    as is or refused. The chain's last stage computes the loss outside the
    model and is never wrapped, but with `last_stage_in_model` (a pipeline's
    stage module that hands its last stage's output to the next rank:
    `PipelinePlans.apply` sets it).

    The model's parameters, buffers and module tree are untouched: only the
    wrapped modules' `forward` is replaced (hooks on them run twice, once
    for the model's call and once for the region's).
    """
    plan = _load(plan)
    applied = _apply(model, plan, batch, form, last_stage_in_model)
    told = [(g["first"], g["last"], g["bytes"]) for g in plan.get("shared_gradients", [])]
    # A chain that counts the parameter gradients has a tied weight's in it
    # already (its later stage's g^ℓ): nothing to be told of.
    counted = plan.get("parameter_gradients_in_chain", False)
    found = [] if counted else shared_gradients(model, plan.get("modules", []), plan.get("parameters"))
    if not counted and sorted(told) != [(g["first"], g["last"], g["bytes"]) for g in found]:
        missing = ", ".join(f"stages {g['first']} and {g['last']} ({g['bytes']} B)" for g in found) or "none"
        applied.note = (applied.note + "; " if applied.note else "") + (
            f"the model's stages share parameters (tied weights: {missing}) other than the export "
            "was told: the predicted peak does not count the gradient autograd holds for them; "
            "export with export_plan(..., model=model)")
    return applied


def _apply(model: nn.Module, plan: dict, batch: Any, form: Optional[str],
           last_stage_in_model: bool = False) -> Applied:
    kind = plan.get("format")
    if kind == "transformers":
        if form not in (None, "switches", "every-layer"):
            raise ExportError(f"form {form!r}: a transformers plan applies `switches` or `every-layer`")
        if form == "every-layer":
            plan = dict(plan, layers=[dict(l, gradient_checkpointing=True) for l in plan["layers"]])
            applied = _apply_switches(model, plan)
            return _with_form(plan, applied, "every-layer")
        return _apply_switches(model, plan)
    if kind != "pytorch":
        raise ExportError(f"format {kind!r}: apply_plan takes `remat export --to pytorch|transformers --json`")
    if batch is None:
        raise ExportError("--to pytorch: pass the batch, to see how the model calls its stages")
    mm = _Model(model, plan, last_stage_in_model)
    mm.probe(batch)
    undo: List[Callable[[], None]] = []
    name = form or "regions"
    regions = plan["regions"] if name == "regions" else _form(plan, name)["regions"]
    problems = _problems(mm, regions)
    note = ""
    if problems and form is None:
        note = "lowered to one-stage regions (per-module wrappers): " + problems[0]
        name = "one-stage"
        regions = _form(plan, name)["regions"]
        problems = _problems(mm, regions)
    # Menu options (`"policies"`): the plan and its one-stage form are
    # judged with them, the other forms (baselines) without.
    policies = (plan.get("policies") or []) if name in ("regions", "one-stage") else []
    problems += _policy_problems(mm, policies)
    mm.let_go()  # the probe's tensors, the strong references
    if problems:
        raise ExportError(f"form {name!r} cannot be applied to this model: " + "; ".join(problems)
                          + ("; run the schedule with remat_torch.checkpointed" if policies else ""))
    try:
        for r in regions:
            if _alone(mm, r):
                _install_alone(mm, r["first"], undo)
            else:
                _install_region(mm, r, undo)
        for p in policies:
            _install_policy(mm, p["stage"], p["policy"], undo)
    except Exception:
        while undo:
            undo.pop()()
        raise
    applied = _applied(plan, name, note)
    applied.policies = list(policies)
    applied._undo.extend(undo)
    return applied


def _with_form(plan: dict, applied: Applied, name: str) -> Applied:
    f = _form(plan, name)
    applied.form = name
    applied.regions = f["regions"]
    applied.predicted = {k: f[k] for k in ("peak_bytes", "makespan_seconds", "fits")}
    applied.fidelity = "differs"
    return applied
