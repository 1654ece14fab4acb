"""Reading and checking a `remat-schedule/1` file before anything runs.

The checker replays the op list on the *logical* state of the chain — which
of a^ℓ, ā^ℓ, δ^ℓ is on the device, on the host or absent — with the rules of
Remat's simulator (crates/remat-core/src/simulator/mod.rs, docs/model.md's
op table) and the same messages, so a schedule that `remat simulate` refuses
is refused here too, before a single forward runs. The runtime
(`remat_torch.runtime`) keeps its own bookkeeping from the tensors it really
holds; the tests compare that with the simulator's states op by op.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Union

FORMAT = "remat-schedule/1"

OP_KINDS = (
    "forward_all",
    "forward_checkpoint",
    "forward_none",
    "backward",
    "offload",
    "prefetch",
    "release",
)
FORWARDS = ("forward_all", "forward_checkpoint", "forward_none")
TRANSFERS = ("offload", "prefetch")
# The operations that name a tensor ("tensor": "output" | "saved") and may
# name stage 0 (a^0): the transfers and the release.
ON_A_TENSOR = TRANSFERS + ("release",)
TENSOR_KINDS = ("output", "saved")
# The largest `option` a file may write (the Rust reader's u8).
MAX_OPTION = 255


class ScheduleError(ValueError):
    """A schedule that cannot be run on this network, with the reason."""


@dataclass(frozen=True)
class Op:
    """One operation: `kind` as written in files, `stage` 1…L (0 for a^0)."""

    kind: str
    stage: int
    tensor: Optional[str] = None  # "output" or "saved" for transfers and releases
    # For forward_all only: which way of running F_all^ℓ. 0 is the classic
    # (keep ā^ℓ); k ≥ 1 is entry k − 1 of the stage's `menu` in the chain
    # (a selective-checkpointing policy: keep less, recompute the rest in
    # B^ℓ). Files leave 0 out.
    option: int = 0

    def __str__(self) -> str:
        """The papers' notation, as the simulator writes it: `F_all^3`,
        `F_all^3[2]` (option 2), `O(ā^3)`, `R(a^2)`."""
        l = self.stage
        if self.kind == "forward_all":
            return f"F_all^{l}[{self.option}]" if self.option else f"F_all^{l}"
        if self.kind == "forward_checkpoint":
            return f"F_ck^{l}"
        if self.kind == "forward_none":
            return f"F_∅^{l}"
        if self.kind == "backward":
            return f"B^{l}"
        sym = f"a^{l}" if self.tensor == "output" else f"ā^{l}"
        letter = {"offload": "O", "prefetch": "P", "release": "R"}[self.kind]
        return f"{letter}({sym})"


@dataclass(frozen=True)
class Schedule:
    ops: List[Op]
    algorithm: str = ""
    chain_name: str = ""
    # The chain's number of stages when the file says it (`"stages": L`,
    # written by `remat solve`); None for hand-written files.
    stages: Optional[int] = None
    budget_bytes: Optional[int] = None
    predicted_peak_bytes: Optional[int] = None
    chain_digest: Optional[str] = None
    # The batch the chain was measured on (`inputs`, copied from the chain
    # by `remat solve`): what a step is checked against.
    inputs: Optional[List[Dict[str, Any]]] = None
    # What the model is made of (`model_fingerprint`, copied from the
    # chain): a plan is refused on a model whose stages differ.
    model_fingerprint: Optional[str] = None
    # Offload op index → the op after which its device copy is freed, as
    # the simulator frees it (`offload_frees`, written by `remat solve`);
    # an offload not listed frees at once (a hand-written schedule).
    offload_frees: Dict[int, int] = field(default_factory=dict)

    def forwards_per_stage(self, n_stages: int) -> List[int]:
        """How many forward operations each stage 1…L runs (index 0 unused)."""
        counts = [0] * (n_stages + 1)
        for op in self.ops:
            if op.kind in FORWARDS and 1 <= op.stage <= n_stages:
                counts[op.stage] += 1
        return counts


def _parse_op(i: int, raw: Any) -> Op:
    where = f"ops[{i}]"
    if not isinstance(raw, dict):
        raise ScheduleError(f"{where}: expected an object like {{\"op\": \"backward\", \"stage\": 3}}")
    kind = raw.get("op")
    if kind not in OP_KINDS:
        raise ScheduleError(
            f"{where}.op: unknown operation {kind!r}, expected one of {', '.join(OP_KINDS)}"
        )
    stage = raw.get("stage")
    if not isinstance(stage, int) or isinstance(stage, bool) or stage < 0:
        raise ScheduleError(f"{where}.stage: expected a stage number ≥ 0, found {stage!r}")
    allowed = {"op", "stage"} | ({"tensor"} if kind in ON_A_TENSOR else set())
    allowed |= {"option"} if kind == "forward_all" else set()
    extra = sorted(set(raw) - allowed)
    if "option" in extra:
        raise ScheduleError(
            f"{where}.option: only forward_all runs an option (an entry of its stage's menu); "
            f"a {kind} operation has none"
        )
    if extra:
        raise ScheduleError(f"{where}.{extra[0]}: unknown field for a {kind} operation")
    option = raw.get("option", 0)
    # A byte, as the Rust reader takes it (a stage has at most 15 entries;
    # whether this one exists is the chain's to say: `validate`).
    if not isinstance(option, int) or isinstance(option, bool) or not 0 <= option <= MAX_OPTION:
        raise ScheduleError(
            f"{where}.option: expected a whole number 0…{MAX_OPTION} (0: the classic F_all, k: entry "
            f"k − 1 of the stage's menu), found {option!r}"
        )
    tensor = None
    if kind in ON_A_TENSOR:
        tensor = raw.get("tensor")
        if tensor not in TENSOR_KINDS:
            raise ScheduleError(
                f"{where}.tensor: expected \"output\" (a^ℓ) or \"saved\" (ā^ℓ), found {tensor!r}"
            )
    return Op(kind, stage, tensor, option)


def parse_schedule(doc: Dict[str, Any]) -> Schedule:
    """A `remat-schedule/1` document (already decoded JSON) as a Schedule."""
    if not isinstance(doc, dict):
        raise ScheduleError("(schedule): expected a JSON object")
    if doc.get("format") != FORMAT:
        raise ScheduleError(f"format: expected {FORMAT!r}, found {doc.get('format')!r}")
    ops_raw = doc.get("ops")
    if not isinstance(ops_raw, list):
        raise ScheduleError("ops: missing or not a list")
    stages = doc.get("stages")
    if stages is not None and (
        not isinstance(stages, int) or isinstance(stages, bool) or stages < 1
    ):
        raise ScheduleError(f"stages: expected a number of stages ≥ 1, found {stages!r}")
    predicted = doc.get("predicted") or {}
    ops = [_parse_op(i, o) for i, o in enumerate(ops_raw)]
    return Schedule(
        ops=ops,
        algorithm=str(doc.get("algorithm", "")),
        chain_name=str(doc.get("chain_name", "")),
        stages=stages,
        budget_bytes=doc.get("budget_bytes"),
        predicted_peak_bytes=predicted.get("peak_bytes") if isinstance(predicted, dict) else None,
        chain_digest=doc.get("chain_digest") if isinstance(doc.get("chain_digest"), str) else None,
        inputs=parse_inputs(doc.get("inputs")),
        model_fingerprint=_optional_string(doc, "model_fingerprint"),
        offload_frees=_parse_offload_frees(doc.get("offload_frees"), ops),
    )


def _parse_offload_frees(raw: Any, ops: List[Op]) -> Dict[int, int]:
    """`offload_frees`: [{"offload": i, "after": j}, …], each i an offload
    of `ops`, once, and j the offload itself or an op after it."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise ScheduleError('offload_frees: expected a list of {"offload": i, "after": j}')
    out: Dict[int, int] = {}
    for k, entry in enumerate(raw):
        where = f"offload_frees[{k}]"
        if not isinstance(entry, dict) or set(entry) != {"offload", "after"}:
            raise ScheduleError(f'{where}: expected {{"offload": i, "after": j}}, found {entry!r}')
        i, after = entry["offload"], entry["after"]
        if not isinstance(i, int) or isinstance(i, bool):
            raise ScheduleError(f"{where}.offload: expected the index of an offload in ops, found {i!r}")
        if not 0 <= i < len(ops) or ops[i].kind != "offload":
            raise ScheduleError(f"{where}.offload: ops[{i}] is not an offload")
        if i in out:
            raise ScheduleError(f"{where}.offload: ops[{i}] is freed twice")
        if not isinstance(after, int) or isinstance(after, bool) or not i <= after < len(ops):
            raise ScheduleError(f"{where}.after: expected the offload (ops[{i}]) or an operation after it, "
                                f"below {len(ops)}; found {after!r}")
        out[i] = after
    return out


def _optional_string(doc: Dict[str, Any], field: str) -> Optional[str]:
    value = doc.get(field)
    if value is not None and not isinstance(value, str):
        raise ScheduleError(f"{field}: expected a string, found {value!r}")
    return value


def parse_inputs(raw: Any) -> Optional[List[Dict[str, Any]]]:
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise ScheduleError("inputs: expected a list of {\"name\", \"shape\", \"dtype\"}")
    out = []
    for i, t in enumerate(raw):
        if (not isinstance(t, dict) or not isinstance(t.get("shape"), list)
                or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in t["shape"])
                or not isinstance(t.get("dtype"), str)):
            raise ScheduleError(f"inputs[{i}]: expected {{\"name\", \"shape\": [whole numbers], \"dtype\"}}")
        out.append({"name": str(t.get("name", "")), "shape": list(t["shape"]), "dtype": t["dtype"]})
    return out


ScheduleLike = Union[str, "os.PathLike[str]", Dict[str, Any], Schedule]


def load_schedule(source: ScheduleLike) -> Schedule:
    """A Schedule from a file path, a decoded JSON dict or a Schedule."""
    if isinstance(source, Schedule):
        return source
    if isinstance(source, dict):
        return parse_schedule(source)
    path = os.fspath(source)
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except json.JSONDecodeError as e:
        raise ScheduleError(f"{path}: not valid JSON: {e}") from None
    try:
        return parse_schedule(doc)
    except ScheduleError as e:
        raise ScheduleError(f"{path}: {e}") from None


# --- the logical replay -------------------------------------------------------

ABSENT, DEVICE, HOST = "absent", "device", "host"


class _Slot:
    """Where one logical tensor is, as the simulator's `Where`."""

    __slots__ = ("where", "by", "checkpoint")

    def __init__(self) -> None:
        self.where = ABSENT
        self.by: Optional[int] = None  # the op that freed / offloaded it
        self.checkpoint = False


def stage_count_problem(schedule: Schedule, n_stages: int) -> Optional[str]:
    """Why this schedule is not for a network of `n_stages` stages, or None."""
    if schedule.stages is not None:
        if schedule.stages != n_stages:
            return (
                f"stages: the schedule was made for a chain of {schedule.stages} stages "
                f"({schedule.chain_name or 'unnamed'}), the network has {n_stages}; "
                "solve again for this network's chain"
            )
        return None
    highest = max((op.stage for op in schedule.ops), default=0)
    if highest != n_stages:
        return (
            f"ops: the schedule's operations name stages up to {highest}, the network has "
            f"{n_stages} stages; this schedule is for another chain"
        )
    return None


def validate(ops: Sequence[Op], n_stages: int,
             option_counts: Optional[Sequence[int]] = None) -> List[Dict[str, Any]]:
    """Raise ScheduleError on the first operation the simulator would refuse.

    Returns the logical state after each op, in the format of
    `remat simulate --json --states`: `{"op": i, "device": [...], "host": [...]}`.

    Mirrors `Simulation::step` and `check_complete`: a read of a tensor that
    is not on the device, a computation of one that is resident or on the
    host, a stage out of range, a transfer of something that is not there,
    a release of something neither on the device nor on the host, an
    F_all option the stage's menu does not have (when `option_counts[ℓ]`,
    the number of ways stage ℓ's F_all can run — 1 + its menu's length —
    is given; index 0 unused), and an op list that does not run every
    B^L … B^1.
    """
    n = n_stages
    act = [_Slot() for _ in range(n + 1)]
    saved = [_Slot() for _ in range(n + 1)]
    grad = [_Slot() for _ in range(n + 1)]
    act[0].where = DEVICE
    grad[n].where = DEVICE
    backwards_done = 0
    states: List[Dict[str, Any]] = []

    def listing(where: str) -> List[str]:
        out = []
        for sym, table in (("a", act), ("ā", saved), ("δ", grad)):
            out += [f"{sym}^{l}" for l in range(n + 1) if table[l].where == where]
        return out

    def name(table: List[_Slot], l: int) -> str:
        return {id(act): "a", id(saved): "ā", id(grad): "δ"}[id(table)] + f"^{l}"

    def fail(i: int, op: Op, reason: str, tensor: str = "") -> ScheduleError:
        who = f"op {i} ({op}): "
        return ScheduleError(who + (f"{tensor} {reason}" if tensor else reason))

    def missing(i: int, op: Op, table: List[_Slot], l: int) -> ScheduleError:
        s = table[l]
        if s.where == HOST:
            reason = f"is on the host (offloaded by op {s.by}): prefetch it first"
        elif s.by is None:
            reason = "is not resident: it was never computed"
        else:
            reason = f"is not resident: it was freed by op {s.by}"
        return fail(i, op, reason, name(table, l))

    def read(i: int, op: Op, table: List[_Slot], l: int) -> None:
        if table[l].where != DEVICE:
            raise missing(i, op, table, l)

    def input_of(i: int, op: Op, l: int):
        if act[l - 1].where == DEVICE:
            return act, l - 1
        if l >= 2:
            if saved[l - 1].where == DEVICE:
                return saved, l - 1
            if saved[l - 1].where == HOST:
                raise missing(i, op, saved, l - 1)
        raise missing(i, op, act, l - 1)

    def must_be_absent(i: int, op: Op, table: List[_Slot], l: int) -> None:
        w = table[l].where
        if w == DEVICE:
            raise fail(i, op, "is already resident: this operation would compute it twice", name(table, l))
        if w == HOST:
            raise fail(
                i, op, "already has a copy on the host: prefetch it instead of recomputing", name(table, l)
            )

    def free(table: List[_Slot], l: int, i: int) -> None:
        if table[l].where == DEVICE:
            table[l].where, table[l].by, table[l].checkpoint = ABSENT, i, False

    for i, op in enumerate(ops):
        l = op.stage
        lowest = 0 if op.kind in ON_A_TENSOR else 1
        if l < lowest or l > n:
            raise fail(i, op, f"stage {l} does not exist: stages are numbered {lowest}..={n}")
        if op.kind in FORWARDS:
            table, k = input_of(i, op, l)
            out = saved if op.kind == "forward_all" else act
            must_be_absent(i, op, out, l)
            if option_counts is not None and op.option >= option_counts[l]:
                # In the simulator's words (engine.rs, `forward`).
                m = option_counts[l] - 1
                raise fail(i, op, (
                    f"option {op.option} does not exist: stage {l} has no menu, only option 0" if m == 0
                    else f"option {op.option} does not exist: stage {l}'s options are 0..={m}"
                ))
            out[l].where, out[l].by, out[l].checkpoint = DEVICE, None, False
            if table is act:
                if op.kind == "forward_checkpoint":
                    act[k].checkpoint = True
                elif op.kind == "forward_none" and not act[k].checkpoint:
                    free(act, k, i)
        elif op.kind == "backward":
            read(i, op, grad, l)
            read(i, op, saved, l)
            input_of(i, op, l)
            must_be_absent(i, op, grad, l - 1)
            grad[l - 1].where, grad[l - 1].by = DEVICE, None
            free(grad, l, i)
            free(saved, l, i)
            free(act, l - 1, i)
            backwards_done += 1
        else:
            if op.tensor == "saved" and l == 0:
                raise fail(i, op, "stage 0 has no ā")
            table = saved if op.tensor == "saved" else act
            s = table[l]
            if op.kind == "release":
                # Forgets a device copy or a host copy alike (`release` in
                # the simulator's engine.rs); a later read names this op as
                # the one that freed it, and a checkpoint flag goes with it.
                if s.where == ABSENT:
                    raise fail(
                        i, op, "is neither on the device nor on the host: there is nothing to release",
                        name(table, l),
                    )
                s.where, s.by, s.checkpoint = ABSENT, i, False
            elif op.kind == "offload":
                if s.where != DEVICE:
                    raise missing(i, op, table, l)
                s.where, s.by = HOST, i
            else:
                if s.where != HOST:
                    reason = (
                        "is already on the device"
                        if s.where == DEVICE
                        else "has no copy on the host: offload it first"
                    )
                    raise fail(i, op, reason, name(table, l))
                s.where, s.by = DEVICE, None
        states.append({"op": i, "device": listing(DEVICE), "host": listing(HOST)})
    if backwards_done < n:
        stage = n - backwards_done
        k = len(ops)
        raise fail(
            k,
            Op("backward", stage),
            f"missing: the schedule ends after {k} op{'' if k == 1 else 's'} without running "
            f"B^{stage}; a training step runs every backward B^{n} … B^1 and produces δ^0",
        )
    return states


def check(schedule: Schedule, n_stages: int, option_counts: Optional[Sequence[int]] = None) -> None:
    """Everything that must hold before a step runs: stage count, then
    validity (with the options each stage has, when known)."""
    problem = stage_count_problem(schedule, n_stages)
    if problem:
        raise ScheduleError(problem)
    validate(schedule.ops, n_stages, option_counts)


def tracked_forwards(ops: Sequence[Op]) -> set:
    """The indices of the F_all^ℓ whose ā^ℓ the runtime must take apart.

    Finding ā^ℓ's storages (a saved-tensors hook on every tensor autograd
    saves) and reading the stage's input afresh at B^ℓ cost a Python call
    per saved tensor; a plain step pays neither. They are needed only when,
    between F_all^ℓ and its B^ℓ, the schedule moves or forgets ā^ℓ (an
    offload, a release: the storages must be known to free them), or
    touches the input the graph stops at (a^{ℓ-1} or ā^{ℓ-1} offloaded,
    released, recomputed, or consumed by another forward of stage ℓ: B^ℓ
    must then read whichever copy is resident). Persistent schedules (rotor,
    revolve, sequential, store-all, hong's) do neither, so their F_all run
    as in a plain step."""
    return {i for i, op in enumerate(ops) if op.kind == "forward_all" and taken_apart_by(ops, i) is not None}


def taken_apart_by(ops: Sequence[Op], i: int) -> Optional[int]:
    """For the F_all^ℓ at index `i`: the first later op, before B^ℓ, that
    moves or forgets ā^ℓ or touches the input a^{ℓ-1} / ā^{ℓ-1} (why
    `tracked_forwards` takes it apart), or None."""
    l = ops[i].stage
    for j in range(i + 1, len(ops)):
        later = ops[j]
        if later.kind == "backward" and later.stage == l:
            return None
        if later.stage == l and (later.kind in FORWARDS or later.kind in ON_A_TENSOR):
            return j
        if later.stage == l - 1 and later.kind in (*FORWARDS, *ON_A_TENSOR):
            return j
    return None


def joined_forwards(ops: Sequence[Op], tracked: set) -> set:
    """The indices of the F_all^ℓ whose graph may start at ā^{ℓ-1} itself
    rather than at a detached view of it, so that B^ℓ and B^{ℓ-1} run as one
    call of autograd's engine, as in a plain step.

    A schedule runs B^ℓ … B^k back to back at the end of most backward
    passes (all of store-all's); one engine call per stage costs a fixed
    few hundred microseconds (a GraphTask, the seed, on CUDA the hand-over
    to the device thread), which on a small or fast step was a 12–34 %
    slowdown over plain autograd. Joining is exact when nothing can come
    between the two: B^{ℓ-1} follows B^ℓ immediately, this F_all^ℓ is the
    one B^ℓ consumes, and neither graph is taken apart (`tracked_forwards`).
    The runtime joins only when the input it finds is that ā^{ℓ-1}."""
    backward_at = {op.stage: i for i, op in enumerate(ops) if op.kind == "backward"}
    joined = set()
    for i, op in enumerate(ops):
        if op.kind != "forward_all" or i in tracked or op.stage < 2:
            continue
        l = op.stage
        b = backward_at.get(l)
        if b is None or b < i or b + 1 >= len(ops) or ops[b + 1] != Op("backward", l - 1):
            continue
        if any(o.kind == "forward_all" and o.stage == l for o in ops[i + 1:b]):
            continue
        joined.add(i)
    return joined
