"""Stages run through `torch.compile`: Remat's plans over compiled stages.

    chain = describe_chain(model, batch, target, loss=fn, compile=True, menu=True)
    step = checkpointed(model, plan, loss=fn, chain=chain, compile=True)

torch.compile's own knob, `torch._functorch.config.activation_memory_budget`,
is one number for the whole graph: its min-cut partitioner decides, op by op,
what the backward recomputes inside fused kernels. Remat's plans act between
stages. Over compiled stages the two combine: each stage's graph module is
compiled alone (inductor), and a stage's menu (docs/formats.md) offers the
partitioner's own choices at other budgets, named
`activation_memory_budget=b`. The option DP then picks, per stage, a
budget — or to recompute the whole stage, or to keep it all — where
torch.compile applies one budget to every stage.

How each operation runs (the same way when `describe_chain` measures it and
when `checkpointed` runs it, so the chain's numbers are those of the run):

* F_all^ℓ: the stage's training graph at the program's budget (1.0 unless
  said); autograd keeps what the partitioner saved.
* F_all^ℓ with option `activation_memory_budget=b`: the graph compiled at b.
* F_ck^ℓ, F_∅^ℓ (no gradient): the stage's inference graph (dynamo compiles
  one per grad mode). Its output had the same bits as the training graphs'
  (GPT-2 blocks, CPU, torch 2.13, dropout replayed); tests/test_compiled.py holds
  the whole step to that.

What holds bit for bit: a plan's step equals the step of the same compiled
stages run one after the other, each stage's F_all at the budget the plan
chose (`python/tests/test_compiled.py`). Gradients of graphs compiled at different
budgets differ in their last bits (the backward's fusions differ), as they do
between torch.compile's own budgets: a plan is compared with the compiled
run it chose, not with eager PyTorch.

Each (stage, budget) gets a function of its own (a fresh code object):
dynamo caches a compiled graph on the code object, and the budget is read
when a graph is compiled, at its first call, so stages compiled at two
budgets must not share one. Compiled graphs are kept per program and budget
(a model described and then run compiles once).
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import torch

# The menu's policy names for the partitioner's budgets: torch's own name.
PREFIX = "activation_memory_budget="

# The budgets `describe_chain(compile=True, menu=True)` measures.
MENU_BUDGETS: Tuple[float, ...] = (0.8, 0.6, 0.4, 0.2, 0.1, 0.0)


def policy_name(budget: float) -> str:
    return f"{PREFIX}{budget:g}"


def budget_of(policy: str) -> Optional[float]:
    """The partitioner budget a menu policy names, or None for another
    policy. A budget outside [0, 1] is refused (ValueError naming it)."""
    if not isinstance(policy, str) or not policy.startswith(PREFIX):
        return None
    text = policy[len(PREFIX):]
    try:
        b = float(text)
    except ValueError:
        raise ValueError(f"policy {policy!r}: {text!r} is not a number") from None
    if not 0.0 <= b <= 1.0:
        raise ValueError(f"policy {policy!r}: the budget must be between 0 and 1, got {b:g}")
    return b


def compile_budget(compile: Any) -> Optional[float]:
    """The `compile=` argument of `describe_chain` and `checkpointed` as
    the partitioner budget of every F_all without an option: None (eager)
    for False, 1.0 for True, else a budget in [0, 1] (ValueError naming
    `compile` otherwise)."""
    if compile is False:
        return None
    if compile is True:
        return 1.0
    if isinstance(compile, bool) or not isinstance(compile, (int, float)) or not 0.0 <= float(compile) <= 1.0:
        raise ValueError(f"compile: expected True or a partitioner budget between 0 and 1, got {compile!r}")
    return float(compile)


class CompiledProgram:
    """`inner`'s stages, each run through `torch.compile` (inductor).

    Everything but `run` is `inner`'s: the same stages, parameters, buffers
    and step constants (attribute access goes to `inner`)."""

    def __init__(self, inner, budget: float) -> None:
        self.inner = inner
        self.budget = budget
        self._graphs: Dict[Tuple[int, float], Callable] = {}

    def __len__(self) -> int:
        return len(self.inner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def graph(self, l: int, budget: float) -> Callable:
        """Stage ℓ compiled at `budget` (compiled at its first call)."""
        key = (l, budget)
        fn = self._graphs.get(key)
        if fn is None:
            inner = self.inner
            scope: Dict[str, Any] = {"run": lambda h, consts: inner.run(l, h, consts)}
            source = "def stage(h, consts):\n    return run(h, consts)\n"
            exec(compile(source, f"<remat_torch: stage {l} compiled at budget {budget:g}>", "exec"), scope)
            fn = self._graphs[key] = _at_budget(
                torch.compile(scope["stage"], backend="inductor", options=self.inductor_options()), budget)
        return fn

    def inductor_options(self) -> Dict[str, Any]:
        """Inductor's settings for this program's stages: its defaults when
        one stage holds the whole model (as `torch.compile(model)` runs it),
        else without its layout optimization.

        On a CPU with mkldnn (and on CUDA where its heuristic says so),
        inductor runs a graph with convolutions in channels-last: it
        converts the graph's input and weights at the boundary and saves the
        converted copies for the backward. Compiled alone, every stage of a
        convolutional network paid that twice — a conversion in and out at
        each stage boundary, and a copy of its input and of its weights kept
        for the backward beside the originals — and its input, read by no
        graph, was freed at the start of a joined backward rather than as
        B^ℓ starts, where the chain's books drop it (ι^ℓ, docs/model.md).
        Measured on a torchvision ResNet-18 (batch 8, 128 px, CPU, one
        process, store-all over its 10 stages compiled one by one): with
        the layout optimization 114.9 MiB and 1.26× eager store-all's time,
        the prediction 7.2 % above the measured peak; without it 81.2 MiB
        and 1.09×, the prediction exact (docs/pytorch.md, "Over compiled
        stages")."""
        compiled = len(self.inner) - len(getattr(self.inner, "eager_stages", ()))
        return {} if compiled <= 1 else {"layout_optimization": False}

    def run(self, l: int, h, consts: Sequence, budget: Optional[float] = None) -> torch.Tensor:
        """Stage ℓ on `h` compiled at `budget` (the program's when None):
        with gradient its training graph, without its inference graph. A
        stage `inner` keeps eager (the user's loss, `loss_apart`) runs eager
        at every budget, as after `torch.compile(model)`."""
        if l in getattr(self.inner, "eager_stages", ()):
            return self.inner.run(l, h, consts)
        return self.graph(l, self.budget if budget is None else budget)(h, consts)


def _at_budget(fn: Callable, budget: float) -> Callable:
    def call(h, consts):
        import torch._functorch.config as functorch_config

        # Read when the graph is compiled (its first call); set at every
        # call, as another stage's compile may have changed it since.
        with functorch_config.patch(activation_memory_budget=budget):
            return fn(h, consts)

    return call


def _raise_dynamo_limits() -> None:
    """One cache entry per recompile of a code object: grad and shapes can
    each add one; the default of 8 would silently fall back to eager."""
    import torch._dynamo

    for limit in ("cache_size_limit", "recompile_limit"):
        if hasattr(torch._dynamo.config, limit):
            setattr(torch._dynamo.config, limit, max(64, getattr(torch._dynamo.config, limit)))


# Per program (weakly) and budget: a model described then run compiles once.
_COMPILED: "weakref.WeakKeyDictionary[Any, Dict[float, CompiledProgram]]" = weakref.WeakKeyDictionary()


def compiled_program(program, budget: float) -> CompiledProgram:
    _raise_dynamo_limits()
    per = _COMPILED.setdefault(program, {})
    if budget not in per:
        per[budget] = CompiledProgram(program, budget)
    return per[budget]
