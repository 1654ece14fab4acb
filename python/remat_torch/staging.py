"""Stages found, not written: any `nn.Module` and its loss cut into a chain.

The model and the user's loss are captured together as one graph with
`torch.export.export(..., strict=False)` (non-strict export runs the model's
own Python on fake tensors, so transformers' and timm's control flow is taken
as it runs for this batch's shapes), then cut where the chain model needs a
cut: between two consecutive computations crossed by **exactly one tensor
that needs a gradient** (the residual stream of a transformer, the feature
map of a CNN). Everything that needs no gradient — the batch, the target,
attention masks, position ids, rotary tables, and whatever is computed from
them alone — and that two or more stages read is a *step constant*:
computed once per step, before the first stage, passed to every stage that
reads it, counted once with a^0, never recomputed, offloaded or released.
What one stage alone reads is computed inside it (`_own_constants`), as in
a model compiled whole, whose partitioner may recompute it in the backward.

The stages run the captured graph's own aten operations on the model's own
parameters and buffers (the same objects, so `.grad` lands where the
optimizer looks, tied weights stay tied); `describe_chain` checks, on the
user's batch, that they give the loss and gradients of the model's own
forward and `loss.backward()`, bit for bit.

Default granularity: one stage per block — a child of an `nn.ModuleList`,
`nn.Sequential` or `nn.ModuleDict` (`transformer.h.3`, `layer2.1`,
`blocks.7`), the deepest such container when they nest — and the glue in
between (stems, embeddings, heads with the loss) as stages named by their
modules joined with `+`. `granularity="fine"` gives every valid cut;
`merge=k` joins k consecutive blocks into one stage; `join_glue=True` joins
the glue to its neighbouring block stage (the stem or embedding to the first,
every other piece of glue — a head with the loss — to the one before it), as
a whole compiled model fuses them: with `merge` covering every block, the
whole step is one stage. `loss_apart=True` keeps the user's loss (what
`loss(output, target)` computes, outside the model) a stage of its own, as
`torch.compile(model)` leaves it: outside the model's graph, run eagerly
after it (`remat_torch.compiled` runs that stage eager); with `join_glue`
and `merge` covering every block, the chain is the whole model, then the loss.

Where the model's own code asks whether it is being traced (transformers'
attention masks: `_eager_paths`), `paths="eager"` captures the path it
takes when run eagerly, `paths="compiled"` the one it takes under
`torch.compile` — on torch < 2.14, whose dynamo answers "exporting" while
compiling, transformers then builds an explicit causal mask (GPT-2 at
partitioner budget 0.6: the eager path's graph kept 356,352 B more than
torch.compile's own). Other kernels, other memory, and results that may
differ in the last bits (a capture is checked against the step run on its
own path: `running_on`): a chain and the plans run on it use the same
`paths`.

A cut never falls just before an operation that writes into the crossing
tensor in place (torchvision's `relu(inplace=True)`): the write would go
into the kept checkpoint.
"""

from __future__ import annotations

import contextlib
import operator
import sys
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import torch
from torch import fx, nn

from .frozen import PythonState, refuse_changes_by_capture, refuse_hooks, watching_writes


class StagingError(ValueError):
    """The model cannot be cut into a chain as asked (the message says where
    and why)."""


class _WithLoss(nn.Module):
    """The model and the user's loss as one module: what export captures.
    `batch` is a tensor (the model's positional input) or a dict of keyword
    inputs."""

    def __init__(self, model: nn.Module, loss: Callable[[Any, Any], torch.Tensor]) -> None:
        super().__init__()
        self.m = model
        self.loss_fn = loss

    def forward(self, batch, target):
        out = self.m(**batch) if isinstance(batch, dict) else self.m(batch)
        return self.loss_fn(out, target)


def model_loss(model: nn.Module, loss: Callable, batch, target) -> torch.Tensor:
    """The user's own step: `loss(model(batch), target)`, as a training loop
    writes it."""
    out = model(**batch) if isinstance(batch, dict) else model(batch)
    return loss(out, target)


_CONTAINERS = (nn.ModuleList, nn.Sequential, nn.ModuleDict)


def _writes_arg(node: fx.Node, value: fx.Node) -> bool:
    """Whether `node` writes into `value` in place (an aten op whose schema
    marks that argument `Tensor(a!)`, or Python's in-place operators)."""
    if node.op != "call_function":
        return False
    if node.target in (operator.iadd, operator.isub, operator.imul, operator.itruediv):
        return bool(node.args) and node.args[0] is value
    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return False
    for i, arg in enumerate(schema.arguments):
        info = arg.alias_info
        if info is None or not info.is_write:
            continue
        given = node.args[i] if i < len(node.args) else node.kwargs.get(arg.name)
        if given is value:
            return True
    return False


def _is_tensor_value(node: fx.Node) -> bool:
    return isinstance(node.meta.get("val"), torch.Tensor)


@dataclass
class Stage:
    """One stage: `module(h, *constants)` → the next crossing tensor (the
    loss for the last stage). `h` is absent for stage 1, which reads only
    step constants (the batch)."""

    name: str
    module: fx.GraphModule
    constants: List[int]  # indices into the step constants
    parameters: List[nn.Parameter] = field(default_factory=list)
    buffers: List[torch.Tensor] = field(default_factory=list)
    # The modules it runs, `+`-joined (`layer2.0`, `conv1+bn1+relu+maxpool`):
    # what `export_plan` wraps and the fingerprint hashes. `name` is what
    # people read: the same, but unique in the chain and short
    # (`_display_names`).
    path: str = ""

    def __call__(self, h: Optional[torch.Tensor], consts: Sequence[torch.Tensor]) -> torch.Tensor:
        args = [consts[i] for i in self.constants]
        return self.module(*args) if h is None else self.module(h, *args)


@dataclass
class StagedModel:
    """A model and its loss as a chain: a constants program (run once per
    step, without gradient) and the stages."""

    model: nn.Module
    loss: Callable
    stages: List[Stage]
    constants_module: fx.GraphModule
    in_spec: Any
    constant_names: List[str]
    # Why a stage spans several blocks, one sentence per such stage
    # (`_why_joined`); `describe_chain` says them.
    joined: List[str] = field(default_factory=list)
    # The last stage is the user's loss alone (`loss_apart`).
    loss_apart: bool = False

    def constants(self, batch, target) -> List[torch.Tensor]:
        """The step constants for this batch: the batch's and the target's
        tensors that a stage reads, and everything computed from them alone."""
        flat = fx._pytree.tree_flatten_spec(([batch, target], {}), self.in_spec)
        with torch.no_grad():
            out = self.constants_module(*flat)
        return list(out)

    @property
    def names(self) -> List[str]:
        return [s.name for s in self.stages]


def _module_chain(node: fx.Node) -> List[str]:
    """The qualified names of the modules `node` ran inside, outermost
    first, relative to the user's model (the wrapper's `m.` removed)."""
    out = []
    for path, _ in (node.meta.get("nn_module_stack") or {}).values():
        if path == "m":
            continue
        if path.startswith("m."):
            out.append(path[2:])
    return out


def _repeats(mod: nn.Module) -> Tuple[bool, bool]:
    """(some class of child repeats, all children are of one class) for a
    ModuleList, Sequential or ModuleDict; (False, False) for anything else."""
    if not isinstance(mod, _CONTAINERS):
        return False, False
    kinds = [type(c) for c in mod.children()]
    return len(kinds) != len(set(kinds)), len(kinds) > 1 and len(set(kinds)) == 1


def _block_key(model: nn.Module, chain: List[str]) -> Optional[str]:
    """The block a node belongs to: the outermost child of a container of
    blocks (one in which some class of child repeats: GPT-2's `h`, VGG's
    `features`, MobileNet's `features`), refined to a deeper child while its
    container holds blocks of one class alone (timm's `stages.0.blocks`), so
    that a block's own parts (`downsample = Sequential(Conv2d, BatchNorm2d)`,
    MobileNet's `conv`) are not taken for blocks."""
    best = None
    for path in chain:
        parent = path.rpartition(".")[0]
        try:
            mod = model.get_submodule(parent) if parent else model
        except AttributeError:
            continue
        some, uniform = _repeats(mod)
        if (best is None and some) or (best is not None and uniform):
            best = path
    return best


def _segment_name(chains: List[List[str]], key: Optional[str]) -> str:
    """A block's name is its key (`layer2.0`; `features.0+features.1` when
    an in-place op joins two), or the deepest module all its nodes ran in
    when that lies inside the block (`stages.1.downsample`). Glue is named
    by the innermost modules its nodes ran in, in order, an enclosing one
    left out when a part of it is named (`conv1+bn1+relu+maxpool`,
    `transformer.ln_f+lm_head`)."""
    common: Optional[List[str]] = None
    for chain in chains:
        if common is None:
            common = list(chain)
        else:
            k = 0
            while k < min(len(common), len(chain)) and common[k] == chain[k]:
                k += 1
            common = common[:k]
    if key is not None:
        if common and (common[-1] + ".").startswith(key + "."):
            return common[-1]
        if key.count("+") >= 2 and common:
            # Many blocks joined (a DenseNet block's layers, which its
            # concatenations bind together): named by what holds them.
            return common[-1]
        return key
    reps: List[str] = []
    for chain in chains:
        if chain and chain[-1] not in reps:
            reps.append(chain[-1])
    reps = [r for r in reps if not any(o.startswith(r + ".") for o in reps)]
    return "+".join(reps)


def _unpacked(position_ids) -> bool:
    """Whether every row of `position_ids` counts up by one (one sequence
    per row, not packed), read on the real tensor before capture."""
    if position_ids is None:
        return True
    if not isinstance(position_ids, torch.Tensor) or position_ids.dim() != 2:
        return False
    return bool((torch.diff(position_ids, dim=-1) == 1).all())


@contextlib.contextmanager
def _eager_paths(batch):
    """Capture the attention path transformers takes eagerly. Exporting, it
    cannot read the inputs' values, so it keeps the causal mask (SDPA then
    runs with an explicit mask, and a GQA model repeats its keys and values
    for each head group) where eagerly, with no padding mask and one
    sequence per row, it passes `is_causal=True` (and `enable_gqa`). Those
    are other kernels with other memory: on an H200, +17 MB per GPT-2 layer
    with the mask, and for an fp32 Llama 2 GB less than the eager step,
    whose GQA falls back to SDPA's math kernel. The stages serve this batch
    only, so the two questions transformers cannot answer while exporting
    are answered here from the real batch: it is not being exported for
    other shapes, and the position ids (its own arange, or the batch's,
    checked) are not packed. A padding mask the batch passes is kept as a
    mask (eagerly it is skipped only when all ones: omit it then)."""
    mu = sys.modules.get("transformers.masking_utils")
    if mu is None or not hasattr(mu, "find_packed_sequence_indices"):
        yield
        return
    positions = batch.get("position_ids") if isinstance(batch, dict) else None
    if not _unpacked(positions):
        yield
        return
    saved = {n: getattr(mu, n) for n in ("is_torchdynamo_exporting", "is_tracing", "find_packed_sequence_indices")
             if hasattr(mu, n)}
    if "is_torchdynamo_exporting" in saved:
        mu.is_torchdynamo_exporting = lambda: False
    if "is_tracing" in saved:
        traced = saved["is_tracing"]
        # Still true of a fake tensor (its values cannot be read), no longer
        # of the export as a whole (transformers < 5.24 asks that way).
        mu.is_tracing = lambda tensor=None: tensor is not None and traced(tensor)
    mu.find_packed_sequence_indices = lambda position_ids: None
    try:
        yield
    finally:
        for n, f in saved.items():
            setattr(mu, n, f)


PATHS = ("eager", "compiled")


def _dynamo_says_exporting() -> bool:
    """Whether dynamo, compiling, answers `torch.compiler.is_exporting()`
    with True (torch < 2.14, before pytorch#176499): transformers then
    takes its exporting path under `torch.compile` too."""
    major, minor = (int(x) for x in torch.__version__.split(".")[:2])
    return (major, minor) < (2, 14)


def _as_compiled(paths: str) -> bool:
    """Whether `paths` asks for a path other than the eager one here: the
    compiled path, where dynamo answers "exporting"."""
    return paths == "compiled" and _dynamo_says_exporting()


@contextlib.contextmanager
def running_on(paths: str):
    """The model run eagerly on the path `paths` captures: "eager" as it is;
    "compiled", on torch < 2.14, with `torch.compiler.is_exporting()`
    answering True, as dynamo answers it while compiling (`_dynamo_says_exporting`).
    The reference a capture's step is checked against: on the 6-layer GQA
    Llama of `scripts/peers.py` the compiled path (causal mask, keys and
    values repeated per head group) gives gradients 1.1e-8 from the eager
    path's, and its capture equals it bit for bit."""
    if not _as_compiled(paths):
        yield
        return
    answer = torch.compiler.is_exporting
    torch.compiler.is_exporting = lambda: True
    try:
        yield
    finally:
        torch.compiler.is_exporting = answer


def _export(model: nn.Module, batch, target, loss: Callable, paths: str = "eager"):
    wrapper = _WithLoss(model, loss)
    try:
        with contextlib.nullcontext() if _as_compiled(paths) else _eager_paths(batch):
            return torch.export.export(wrapper, (batch, target), strict=False)
    except Exception as e:  # export's errors are many types; all are the model's
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise StagingError(
            f"{type(model).__name__}: torch.export could not capture the model and its loss "
            f"on this batch ({type(e).__name__}: {first}); pass the stages yourself as a list "
            "of modules (the last one returning the loss)"
        ) from e


def find_stages(
    model: nn.Module,
    batch,
    target,
    loss: Callable,
    granularity: str = "block",
    merge: int = 1,
    join_glue: bool = False,
    loss_apart: bool = False,
    paths: str = "eager",
) -> StagedModel:
    """Cut `loss(model(batch), target)` into stages (module docstring)."""
    if granularity not in ("block", "fine"):
        raise StagingError(f"granularity: expected \"block\" or \"fine\", got {granularity!r}")
    if not isinstance(merge, int) or isinstance(merge, bool) or merge < 1:
        raise StagingError(f"merge: expected a whole number ≥ 1, got {merge!r}")
    if not isinstance(join_glue, bool):
        raise StagingError(f"join_glue: expected True or False, got {join_glue!r}")
    if not isinstance(loss_apart, bool):
        raise StagingError(f"loss_apart: expected True or False, got {loss_apart!r}")
    if paths not in PATHS:
        raise StagingError(f"paths: expected \"eager\" or \"compiled\", got {paths!r}")
    ep = _export(model, batch, target, loss, paths)
    gm = ep.module()
    graph = gm.graph

    # Guards and metadata assertions check the batch's shapes; the stages
    # run on the batch they were found for, so they are dropped.
    for node in list(graph.nodes):
        drop = node.op == "call_module" and str(node.target).startswith("_guards")
        name = str(node.target)
        drop |= node.op == "call_function" and "_assert" in name and not node.users
        if drop:
            graph.erase_node(node)
    # Dead values (a KV cache the loss never reads) are dropped, writes kept.
    for node in reversed(list(graph.nodes)):
        if node.op == "call_function" and not node.users:
            schema = getattr(node.target, "_schema", None)
            if node.target is operator.getitem or (schema is not None and not schema.is_mutable):
                graph.erase_node(node)

    params = {id(p) for p in model.parameters() if p.requires_grad}
    nodes = list(graph.nodes)
    variable: Dict[fx.Node, bool] = {}
    for node in nodes:
        if node.op == "get_attr":
            variable[node] = id(getattr_path(gm, node.target)) in params
        elif node.op == "placeholder":
            variable[node] = False
        else:
            variable[node] = any(variable.get(a, False) for a in node.all_input_nodes)

    computed = [n for n in nodes if n.op == "call_function"]
    order = [n for n in computed if variable[n]]
    consts = [n for n in computed if not variable[n]]
    output = next(n for n in nodes if n.op == "output")
    loss_node = output.args[0]
    while isinstance(loss_node, (tuple, list)):
        if len(loss_node) != 1:
            raise StagingError("loss: must return one scalar tensor")
        loss_node = loss_node[0]
    if not isinstance(loss_node, fx.Node) or not variable.get(loss_node, False):
        raise StagingError(
            "loss: its value does not depend on any trainable parameter of the model "
            "(nothing to back-propagate)"
        )
    val = loss_node.meta.get("val")
    if isinstance(val, torch.Tensor) and val.numel() != 1:
        raise StagingError(f"loss: must return one scalar, got a tensor of shape {tuple(val.shape)}")

    index = {n: i for i, n in enumerate(order)}
    n_ops = len(order)
    last_use: Dict[fx.Node, int] = {}
    for n in order:
        uses = [index[u] for u in n.users if u in index]
        if n is loss_node:
            uses.append(n_ops)
        last_use[n] = max(uses, default=index[n])

    # Valid cuts: after position i, exactly one variable tensor crosses and
    # nothing later writes into it in place.
    crossing_at: List[List[fx.Node]] = []
    live: List[fx.Node] = []
    for i, n in enumerate(order):
        live = [v for v in live if last_use[v] > i]
        if last_use[n] > i:
            live.append(n)
        crossing_at.append(list(live))
    cuts: List[int] = []
    for i in range(n_ops - 1):
        cross = crossing_at[i]
        if len(cross) != 1 or not _is_tensor_value(cross[0]):
            continue
        v = cross[0]
        if any(index.get(u, -1) > i and _writes_arg(u, v) for u in v.users):
            continue
        cuts.append(i)

    chains = {n: _module_chain(n) for n in order}
    keys = {n: _block_key(model, chains[n]) for n in order}

    # The finest segments, then grouped into blocks.
    bounds = [-1] + cuts + [n_ops - 1]
    segments = [order[a + 1 : b + 1] for a, b in zip(bounds, bounds[1:])]

    def seg_key(seg: List[fx.Node]) -> Optional[str]:
        # The blocks a segment spans (two when an in-place op forbids the
        # cut between them), or None for glue.
        ks: List[str] = []
        for n in seg:
            k = keys[n]
            if k is None:
                return None
            if k not in ks:
                ks.append(k)
        return "+".join(ks)

    groups: List[Tuple[Optional[str], List[fx.Node]]] = []
    for seg in segments:
        k = seg_key(seg)
        if granularity == "block" and groups and groups[-1][0] == k:
            groups[-1][1].extend(seg)
        else:
            groups.append((k, list(seg)))
    if merge > 1:
        merged: List[Tuple[Optional[str], List[fx.Node]]] = []
        run = 0
        for k, seg in groups:
            if k is not None and merged and merged[-1][0] is not None and run % merge != 0:
                merged[-1] = (merged[-1][0] + "+" + k, merged[-1][1] + seg)
            else:
                merged.append((k, seg))
                run = 0
            run = run + 1 if k is not None else 0
        groups = merged
    if join_glue and any(k is not None for k, _ in groups):
        groups = _join_glue(groups)
    if loss_apart:
        groups = _loss_apart(groups, order, cuts, crossing_at)

    # One stage is a chain only when asked for (the whole step joined).
    if len(groups) < 2 and not (join_glue and groups):
        raise StagingError(_no_cut_message(model, order, keys, crossing_at))

    # A constant only one stage reads is that stage's own computation: it
    # runs inside the stage (as in a model compiled whole, whose
    # partitioner may recompute a rotary table in the backward rather than
    # keep it). The others, and every placeholder, are step constants.
    own = _own_constants(consts, [g for _, g in groups])
    consts = [c for c in consts if c not in own]
    stage_nodes = [[c for c in own if own[c] == s] + g for s, (_, g) in enumerate(groups)]
    const_set = set(consts) | {n for n in nodes if n.op == "placeholder"}
    members = {n: s for s, g in enumerate(stage_nodes) for n in g}
    const_used: List[fx.Node] = []
    for g in stage_nodes:
        for n in g:
            for a in n.all_input_nodes:
                if a in const_set and a not in const_used:
                    const_used.append(a)

    constants_module = _constants_module(gm, nodes, consts, const_used)
    stages: List[Stage] = []
    paths: List[str] = []
    blocks_of: List[List[str]] = []
    units_of: List[List[str]] = []
    for s, ((key, g), seg_nodes) in enumerate(zip(groups, stage_nodes)):
        # `g` names the stage and finds its crossing; `seg_nodes` is what
        # it runs (its own constants first).
        inp = None
        if s > 0:
            inp = crossing_at[index[groups[s - 1][1][-1]]][0]
        out = loss_node if s == len(stage_nodes) - 1 else crossing_at[index[g[-1]]][0]
        name = _joined_name(g, keys, chains) if join_glue else _segment_name([chains[n] for n in g], key)
        if s == len(stage_nodes) - 1:
            name = (name + "+loss") if name else "loss"
        paths.append(name or f"stage{s + 1}")
        blocks_of.append(list(dict.fromkeys(keys[n] for n in g if keys[n] is not None)))
        units_of.append(_units(g, blocks_of[-1], keys, chains))
        stages.append(
            _stage_module(gm, s, paths[-1], seg_nodes, inp, out, const_used, members, variable)
        )
    for stage, path, shown in zip(stages, paths, _display_names(paths, units_of)):
        stage.path, stage.name = path, shown
    joined = [
        why
        for l, (blocks, (_, g)) in enumerate(zip(blocks_of, groups), start=1)
        if merge == 1 and len(blocks) >= 2
        for why in [_why_joined(l, stages[l - 1].name, blocks, g, keys, index, crossing_at, chains)]
        if why is not None
    ]
    return StagedModel(
        model=model,
        loss=loss,
        stages=stages,
        constants_module=constants_module,
        in_spec=gm._in_spec,
        constant_names=[n.name for n in const_used],
        joined=joined,
        loss_apart=loss_apart,
    )


def _in_model(node: fx.Node) -> bool:
    """Whether `node` ran inside the user's model (not in the loss after it)."""
    return any(path == "m" or path.startswith("m.") for path, _ in (node.meta.get("nn_module_stack") or {}).values())


def _loss_apart(groups: List[Tuple[Optional[str], List[fx.Node]]], order: List[fx.Node], cuts: List[int],
                crossing_at: List[List[fx.Node]]) -> List[Tuple[Optional[str], List[fx.Node]]]:
    """`groups` with the loss's operations (those after the model's, run
    outside it) taken out of the last stage into a stage of their own.
    StagingError when the loss computes nothing there or reads more than
    one tensor that needs a gradient from the model."""
    tail = len(order)
    while tail > 0 and not _in_model(order[tail - 1]):
        tail -= 1
    if tail == len(order):
        raise StagingError("loss_apart: the loss computes nothing outside the model (the model returns it, "
                           "or `loss` only reads it): there is no loss to run as a stage of its own")
    if tail == 0 or any(not _in_model(n) for n in order[:tail]):
        raise StagingError("loss_apart: the loss's operations are not all after the model's")
    if tail - 1 not in cuts:
        cross = crossing_at[tail - 1]
        names = ", ".join(f"`{v.name}`" for v in cross[:4])
        raise StagingError(
            f"loss_apart: {len(cross)} tensors that need a gradient cross from the model to the loss ({names}); "
            "the loss can be a stage of its own only when it reads exactly one")
    loss_nodes = set(order[tail:])
    out = [(k, [n for n in g if n not in loss_nodes]) for k, g in groups]
    return [(k, g) for k, g in out if g] + [(None, order[tail:])]


def _join_glue(groups: List[Tuple[Optional[str], List[fx.Node]]]) -> List[Tuple[Optional[str], List[fx.Node]]]:
    """Glue (key None) joined to a block stage: what comes before the first
    block to it, any other glue to the block stage before it."""
    joined: List[Tuple[Optional[str], List[fx.Node]]] = []
    leading: List[fx.Node] = []
    for k, seg in groups:
        if k is None and joined:
            joined[-1] = (joined[-1][0], joined[-1][1] + seg)
        elif k is None:
            leading += seg
        else:
            joined.append((k, leading + seg))
            leading = []
    return joined


def _joined_name(g: List[fx.Node], keys, chains) -> str:
    """A stage of blocks and glue joined to them, named by its runs in
    order (`patch_embed+pos_drop+blocks.0`, `blocks.11+norm+head`)."""
    runs: List[Tuple[Optional[str], List[fx.Node]]] = []
    for n in g:
        glue = keys[n] is None
        if runs and (runs[-1][0] is None) == glue:
            runs[-1][1].append(n)
        else:
            runs.append((None if glue else keys[n], [n]))
    parts = []
    for k, run in runs:
        if k is not None:
            k = "+".join(dict.fromkeys(keys[n] for n in run))
        part = _segment_name([chains[n] for n in run], k)
        if part and part not in parts:
            parts.append(part)
    return "+".join(parts)


# A stage name longer than this many `+`-joined parts is shortened.
MAX_NAME_PARTS = 6


def _units(g: List[fx.Node], blocks: List[str], keys, chains) -> List[str]:
    """What a stage spanning two or more blocks is named by, in order: its
    blocks, and the modules between them that are no block (a U-Net's
    `mid`, by its outermost module unless that holds the blocks: GPT-2's
    `transformer.ln_f`, not `transformer`). Empty for other stages."""
    if len(blocks) < 2:
        return []
    units: List[str] = []
    for n in g:
        if keys[n] is not None:
            u = keys[n]
        elif chains[n]:
            outer = chains[n][0]
            u = chains[n][-1] if any(b.startswith(outer + ".") for b in blocks) else outer
        else:
            continue  # the model's own forward (a skip's `+`)
        if u not in units:
            units.append(u)
    return units


def _display_names(paths: List[str], units_of: List[List[str]]) -> List[str]:
    """The stages' names as people read them: a stage spanning several
    blocks with glue between them (a U-Net's long skips) is named by its
    blocks (`down.1+down.2+mid`), not by every module inside; a name of
    more than MAX_NAME_PARTS parts keeps its first two and its last
    (`dec.0+dec.1+…+dec.5 (6 parts)`: a T5 decoder as one stage was
    named in 1,304 characters); names that repeat (`granularity="fine"`
    cuts a block in several stages) get their rank, `transformer.h.0[2]`."""
    shown = []
    for path, units in zip(paths, units_of):
        loss = path.endswith("+loss")
        modules = path[: -len("+loss")].split("+") if loss else path.split("+")
        # By its blocks only where that is shorter: a DenseNet block, whose
        # layers its concatenations bind, keeps the one module holding them.
        by_units = len(units) >= 2 and len(units) < len(modules)
        parts = units if by_units else modules
        what = "parts" if by_units else "modules"
        if len(parts) > MAX_NAME_PARTS:
            name = f"{parts[0]}+{parts[1]}+…+{parts[-1]} ({len(parts)} {what})"
        else:
            name = "+".join(parts)
        shown.append(name + "+loss" if loss and name != "loss" else name)
    seen: Dict[str, int] = {}
    total = {n: shown.count(n) for n in shown}
    out = []
    for n in shown:
        if total[n] > 1:
            seen[n] = seen.get(n, 0) + 1
            n = f"{n}[{seen[n]}]"
        out.append(n)
    return out


def _why_joined(l: int, name: str, blocks: List[str], g: List[fx.Node], keys, index, crossing_at,
                chains) -> Optional[str]:
    """Why stage ℓ holds `blocks` (two or more) in one stage: at the first
    boundary between two of its blocks, the tensors that need a gradient
    crossing it — each with the module that made it and the block that
    reads it last — where a cut must be crossed by exactly one. None when
    the boundary is crossed by one tensor written in place later (VGG's
    `features.0+features.1`, a conv and its `ReLU(inplace=True)`: common,
    documented, and no coarser than two modules)."""
    made_in = lambda n: (chains[n][-1] if chains[n] else "the model's own forward")  # noqa: E731
    for a, b in zip(g, g[1:]):
        ka, kb = keys[a], keys[b]
        if ka is None or kb is None or ka == kb:
            continue
        cross = crossing_at[index[a]]
        if len(cross) == 1:
            return None

        def last_reader(v):
            readers = [u for u in v.users if u in index]
            last = max(readers, key=lambda u: index[u], default=None)
            return keys.get(last) or (made_in(last) if last is not None else "the loss")

        listed = "; ".join(f"`{v.name}` from {made_in(v)}, last read in {last_reader(v)}" for v in cross[:4])
        more = f" and {len(cross) - 4} more" if len(cross) > 4 else ""
        why = (f"{len(cross)} tensors that need a gradient cross it ({listed}{more}), and a cut must be "
               "crossed by exactly one")
        return (f"stage {l} ({name}) holds {len(blocks)} blocks, {blocks[0]} … {blocks[-1]}: "
                f"between {ka} and {kb}, {why}; no boundary inside it is a cut. A plan can only keep or "
                "recompute it whole: pass the stages yourself as a list of modules to cut it otherwise")
    return f"stage {l} ({name}) holds {len(blocks)} blocks"


def getattr_path(root: nn.Module, target: str):
    obj: Any = root
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _no_cut_message(model, order, keys, crossing_at) -> str:
    for i in range(len(order) - 1):
        a, b = keys[order[i]], keys[order[i + 1]]
        if a != b and a is not None and b is not None:
            cross = crossing_at[i]
            what = ", ".join(f"`{v.name}`" for v in cross[:4])
            return (
                f"{type(model).__name__}: no stage boundary found: between `{a}` and `{b}`, "
                f"{len(cross)} tensors that need a gradient cross ({what}); a cut must be crossed "
                "by exactly one. Pass the stages yourself as a list of modules."
            )
    return (
        f"{type(model).__name__}: no stage boundary found: at no point of the step does "
        "exactly one tensor that needs a gradient cross from one computation to the next. "
        "Pass the stages yourself as a list of modules."
    )


def _copy_into(new: fx.Graph, gm: fx.GraphModule, node: fx.Node, env: Dict[fx.Node, fx.Node]) -> fx.Node:
    def arg(a: fx.Node) -> fx.Node:
        if a not in env:
            if a.op == "get_attr":
                env[a] = new.get_attr(a.target)
            else:
                raise KeyError(a.name)
        return env[a]

    env[node] = new.node_copy(node, arg)
    return env[node]


def _own_constants(consts: List[fx.Node], stage_nodes: List[List[fx.Node]]) -> Dict[fx.Node, int]:
    """The constants (in graph order) that one stage alone reads, directly
    or through other constants, each with that stage's index. A constant
    that another constant reads is read by that one's stages too, so what
    stays a step constant never reads one that moved into a stage."""
    stage_of = {n: s for s, g in enumerate(stage_nodes) for n in g}
    is_const = set(consts)
    readers: Dict[fx.Node, set] = {}
    for c in reversed(consts):
        found: set = set()
        for user in c.users:
            if user in stage_of:
                found.add(stage_of[user])
            elif user in is_const:
                found |= readers[user]
            else:
                found.add(None)  # the output, or a node of no stage: keep it a step constant
        readers[c] = found
    return {c: next(iter(readers[c])) for c in consts if len(readers[c]) == 1 and None not in readers[c]}


def _constants_module(gm, nodes, consts, const_used) -> fx.GraphModule:
    new = fx.Graph()
    env: Dict[fx.Node, fx.Node] = {}
    for n in nodes:
        if n.op == "placeholder":
            env[n] = new.placeholder(n.name)
    for n in consts:
        _copy_into(new, gm, n, env)
    new.output(tuple(env[n] for n in const_used))
    return fx.GraphModule(gm, new)


def _stage_module(gm, s, name, g, inp, out, const_used, members, variable) -> Stage:
    new = fx.Graph()
    env: Dict[fx.Node, fx.Node] = {}
    if inp is not None:
        env[inp] = new.placeholder("h")
    used = []
    for n in g:
        for a in n.all_input_nodes:
            if a in const_used and a not in used:
                used.append(a)
    used.sort(key=const_used.index)
    for a in used:
        env[a] = new.placeholder(f"c_{a.name}")
    for n in g:
        _copy_into(new, gm, n, env)
    new.output(env[out])
    module = fx.GraphModule(gm, new)
    attrs = [getattr_path(gm, n.target) for n in new.nodes if n.op == "get_attr"]
    return Stage(
        name=name,
        module=module,
        constants=[const_used.index(a) for a in used],
        parameters=[t for t in attrs if isinstance(t, nn.Parameter)],
        buffers=[t for t in attrs if isinstance(t, torch.Tensor) and not isinstance(t, nn.Parameter)],
    )


class StageList:
    """The old convention as a program: the user's own stages, stage 1 reads
    the batch as a^0, the last is called `stage(h, target)` and returns the
    loss. No step constants but the target."""

    def __init__(self, stages: Sequence[nn.Module]) -> None:
        self.modules: List[nn.Module] = list(stages)
        if not self.modules:
            raise StagingError("stages: the network has no stage")
        self.names = [f"{i}:{type(m).__name__}" for i, m in enumerate(self.modules, start=1)]
        self.module_names: List[Optional[str]] = [None] * len(self.modules)

    def __len__(self) -> int:
        return len(self.modules)

    def constants(self, batch, target) -> List[Any]:
        return [target]

    def first_input(self, batch) -> Optional[torch.Tensor]:
        return batch

    def read_after_first(self) -> set:
        """The step constants (indices) a stage after the first reads."""
        return {0}

    def run(self, l: int, h, consts) -> torch.Tensor:
        m = self.modules[l - 1]
        return m(h, consts[0]) if l == len(self.modules) else m(h)

    def parameters(self, l: int) -> List[nn.Parameter]:
        return list(self.modules[l - 1].parameters())

    def parameter_names(self, l: int) -> List[str]:
        """The trainable parameters stage l reads, named as in an
        `nn.Sequential` of the stages (`3.weight`)."""
        return _named(nn.ModuleList(self.modules), self.parameters(l))

    def buffers(self, l: int) -> List[torch.Tensor]:
        return list(self.modules[l - 1].buffers())

    def all_parameters(self) -> List[nn.Parameter]:
        return _distinct(p for m in self.modules for p in m.parameters())

    def all_buffers(self) -> List[torch.Tensor]:
        return _distinct(b for m in self.modules for b in m.buffers())

    def attribute_tensors(self) -> List[torch.Tensor]:
        return _attribute_tensors(self.modules)


class StagedProgram:
    """A `StagedModel` as the runtime and the describer run it."""

    def __init__(self, staged: StagedModel) -> None:
        self.staged = staged
        self.names = [s.name for s in staged.stages]
        self.module_names: List[Optional[str]] = [
            s.path[: -len("+loss")] if s.path.endswith("+loss") else (None if s.path == "loss" else s.path)
            for s in staged.stages
        ]
        # The model's plain attributes at capture (`remat_torch.frozen`),
        # set by `make_program`; every step is checked against them.
        self.python_state: Optional[PythonState] = None
        # Stages run eagerly even over compiled stages: the user's loss as
        # a stage of its own, which `torch.compile(model)` leaves eager.
        self.eager_stages = {len(staged.stages)} if staged.loss_apart else set()

    def __len__(self) -> int:
        return len(self.staged.stages)

    def constants(self, batch, target) -> List[Any]:
        return self.staged.constants(batch, target)

    def first_input(self, batch) -> Optional[torch.Tensor]:
        return None

    def read_after_first(self) -> set:
        """The step constants (indices) a stage after the first reads."""
        return {i for s in self.staged.stages[1:] for i in s.constants}

    def run(self, l: int, h, consts) -> torch.Tensor:
        return self.staged.stages[l - 1](h, consts)

    def parameters(self, l: int) -> List[nn.Parameter]:
        return list(self.staged.stages[l - 1].parameters)

    def parameter_names(self, l: int) -> List[str]:
        """The trainable parameters stage l reads, by their qualified names
        in the model (`classifier.3.weight`; a tied weight by its first)."""
        return _named(self.staged.model, self.parameters(l))

    def buffers(self, l: int) -> List[torch.Tensor]:
        return list(self.staged.stages[l - 1].buffers)

    def all_parameters(self) -> List[nn.Parameter]:
        return _distinct(self.staged.model.parameters())

    def all_buffers(self) -> List[torch.Tensor]:
        return _distinct(self.staged.model.buffers())

    def attribute_tensors(self) -> List[torch.Tensor]:
        # The captured graph's constants (tensors kept as plain attributes,
        # lifted by export) are among each stage's non-parameter attributes.
        return _distinct(
            [*_attribute_tensors([self.staged.model]), *(b for s in self.staged.stages for b in s.buffers)]
        )


def _attribute_tensors(modules: Sequence[nn.Module]) -> List[torch.Tensor]:
    """Tensors kept as plain attributes of the modules (not parameters or
    buffers): constants a stage reads, never part of what it saves."""
    out = []
    for m in modules:
        for sub in m.modules():
            out.extend(v for v in vars(sub).values() if isinstance(v, torch.Tensor))
    return _distinct(out)


def _named(root: nn.Module, params: Iterable[nn.Parameter]) -> List[str]:
    """The qualified names under `root` of the trainable `params`, once each,
    in their order (a parameter `root` does not hold is left out)."""
    names = {id(p): n for n, p in root.named_parameters()}
    out: List[str] = []
    for p in params:
        n = names.get(id(p))
        if p.requires_grad and n is not None and n not in out:
            out.append(n)
    return out


def _distinct(items) -> list:
    seen: Dict[int, Any] = {}
    for t in items:
        seen.setdefault(id(t), t)
    return list(seen.values())


# Found programs, per model (weakly: a dropped model drops its programs) and
# per batch signature, loss and granularity: describing a model and then
# running several schedules on it captures it once.
_FOUND: "weakref.WeakKeyDictionary[nn.Module, Dict[Tuple, StagedProgram]]" = weakref.WeakKeyDictionary()


def signature(batch, target) -> Tuple:
    leaves = sorted(batch.items()) if isinstance(batch, dict) else [("", batch)]
    leaves = leaves + [("target", target)]
    return tuple(
        (k, tuple(v.shape), v.dtype, str(v.device), v.requires_grad) if isinstance(v, torch.Tensor)
        else (k, repr(v))
        for k, v in leaves
    )


def make_program(model, batch, target, loss: Optional[Callable], granularity: str = "block",
                 merge: int = 1, join_glue: bool = False, loss_apart: bool = False, paths: str = "eager"):
    """The stages of `model`: the user's own (a list or `nn.Sequential` and
    no `loss`: the old convention), else found by `find_stages` (once per
    model, batch signature, loss, granularity, merge, join_glue, loss_apart
    and paths)."""
    if loss is None:
        if isinstance(model, (list, tuple, nn.Sequential)):
            return StageList(list(model))
        raise StagingError(
            "loss: required for a model that is not a list of stages: pass "
            "loss=fn with fn(output, target) returning the scalar loss, as your training loop "
            "computes it"
        )
    if isinstance(model, (list, tuple)):
        model = nn.Sequential(*model)
    # Under autocast the captured graph holds its casts: a program found
    # outside it is another computation.
    autocast = tuple(
        (torch.is_autocast_enabled(d), torch.get_autocast_dtype(d)) for d in ("cpu", "cuda")
    )
    key = (signature(batch, target), loss, granularity, merge, join_glue, loss_apart, paths, model.training,
           autocast)
    found = _FOUND.setdefault(model, {})
    if key not in found:
        # What capture would freeze (remat_torch.frozen): hooks refused
        # before, a forward that changes Python state after; what the
        # stages read is kept to be compared at every step.
        refuse_hooks(model)
        before = PythonState(model)
        with watching_writes(before):
            program = StagedProgram(find_stages(model, batch, target, loss, granularity, merge, join_glue,
                                                loss_apart, paths))
        refuse_changes_by_capture(before)
        program.python_state = before
        found[key] = program
    return found[key]


def fingerprint(program) -> str:
    """What a program's stages are made of: `sha256:` of every found
    stage's module path and its parameters' and buffers' shapes and
    dtypes, in order. A plan
    carries its model's (`model_fingerprint`, from the chain) and is
    refused on a model whose fingerprint differs: a wider layer, another
    depth, another dtype — what the batch's shapes cannot tell apart. Not
    covered: a change that leaves every parameter's shape (more attention
    heads of the same width, another activation function)."""
    import hashlib

    h = hashlib.sha256()
    for l in range(1, len(program) + 1):
        # The module path of a found stage (`transformer.h.3`); a list's
        # stages are named by their type, which `torch.compile` changes
        # (OptimizedModule) without changing the model: left out.
        h.update(f"stage {program.module_names[l - 1] or ''}\n".encode())
        for kind, tensors in (("p", program.parameters(l)), ("b", program.buffers(l))):
            for t in tensors:
                h.update(f"{kind} {tuple(t.shape)} {t.dtype}\n".encode())
    # Stages run through torch.compile (`remat_torch.compiled`) keep other
    # tensors than eager ones: a chain measured one way is not the other's.
    from .compiled import CompiledProgram

    compiled = COMPILED_SUFFIX if isinstance(program, CompiledProgram) else ""
    return "sha256:" + h.hexdigest() + compiled


COMPILED_SUFFIX = " (torch.compile)"
