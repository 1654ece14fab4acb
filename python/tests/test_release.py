"""The `release` op (R(a^ℓ), R(ā^ℓ), docs/model.md): schedules of the dynamic
runtimes (dtr, delta, delta-lru, delta-greedy) from `remat solve`, run by
remat_torch on the CPU and compared with a plain autograd step and with
`remat simulate --json --states`; hand-written schedules that release a host
copy and check that a released device copy is really freed; and bad
releases refused with the simulator's own message.

As in test_schedules.py, the comparisons with the plain step are bitwise.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Dict, List, Optional

import pytest
import torch

import remat_torch
from remat_torch import ScheduleError
from remat_torch.schedule import load_schedule, validate

from helpers import (
    NETWORKS, chain_for, plain_and_counted_twin, plain_step, remat, same_verdict, simulator_states, snapshot,
)

SEED = 2024
# DTR decides with compute times only; DELTA weighs a transfer against a
# recomputation, so it releases (recomputes) rather than offloads only when
# the link is slow: 1 MB/s makes these small tensors' transfers cost more
# than their stages' forwards.
RUNTIMES = {
    "dtr": [],
    "delta": ["--bandwidth", "1MB/s"],
    "delta-lru": ["--bandwidth", "1MB/s"],
    "delta-greedy": ["--bandwidth", "1MB/s"],
}
BUDGETS = [f"{p}%" for p in range(30, 100, 5)]


def _solve(chain: Path, out: Path, *args: str) -> Optional[dict]:
    """`remat solve … --json -o OUT`'s report, or None when no schedule
    fits the budget: infeasible, or below the chain's memory floor, which
    the CLI refuses on --budget with exit 2."""
    p = remat("solve", str(chain), *args, "--json", "-o", str(out), check=False)
    if p.returncode == 2 and p.stderr.startswith("error: --budget:"):
        return None
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    return report if report["feasible"] else None


def _releases(path: Path) -> int:
    return sum(1 for o in load_schedule(path).ops if o.kind == "release")


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Dict[str, Dict[str, Path]]:
    """Per network: its chain and, per runtime, the schedule at the lowest
    budget (searched, not guessed) where it is feasible and releases."""
    root = tmp_path_factory.mktemp("release")
    out: Dict[str, Dict[str, Path]] = {}
    for name, make in NETWORKS.items():
        net, x, target = make()
        chain = root / f"{name}.chain.json"
        chain.write_text(json.dumps(chain_for(name, net, x, target)))
        out[name] = {"chain": chain}
        for algorithm, extra in RUNTIMES.items():
            for b in BUDGETS:
                path = root / f"{name}.{algorithm}.json"
                if _solve(chain, path, "-a", algorithm, "-b", b, *extra) and _releases(path):
                    out[name][algorithm] = path
                    break
    return out


CASES = [(n, a) for n in NETWORKS for a in RUNTIMES]


def _schedule(files, name: str, algorithm: str) -> Path:
    path = files[name].get(algorithm)
    # Without this the tests below could pass on schedules with no release.
    assert path is not None, f"{name}: {algorithm} releases nothing at any of {BUDGETS}"
    assert _releases(path) > 0
    return path


def _sim(states: List[dict]) -> List[dict]:
    return [{"op": s["op"], "device": s["device"], "host": s["host"]} for s in states]


def _assert_plain(got: dict, want: dict, label: str) -> None:
    assert torch.equal(got["loss"], want["loss"]), (label, got["loss"], want["loss"])
    for p in want["grads"]:
        assert torch.equal(got["grads"][p], want["grads"][p]), f"{label}: grad of {p}"
    for b in want["buffers"]:
        assert torch.equal(got["buffers"][b], want["buffers"][b]), f"{label}: buffer {b}"
    assert torch.equal(got["rng"], want["rng"]), f"{label}: the global RNG is elsewhere"


@pytest.mark.parametrize("name,algorithm", CASES)
def test_release_schedules_give_plain_gradients(files, name, algorithm):
    """A dynamic runtime's schedule (with its releases, and for delta its
    offloads and prefetches) gives the plain step's loss, gradients,
    buffers and RNG state bitwise, and runs each stage's forward exactly as
    often as the schedule lists. Fails if B^ℓ back-propagates through the
    input F_all^ℓ ran on after that was released and recomputed (the graph
    reading a storage resized to 0, or stale memory), or if a recomputation
    after a release uses another dropout mask. Mutations tried: the graph
    keeping the input tensor it ran on (pack not turning it into an
    `InputView`, the behaviour before release) → every case fails in B^ℓ
    ("The tensor has a non-zero number of elements, but its data is not
    allocated yet"); release a no-op in `validate` → every case is refused
    before it runs (the recomputing F_all: "is already resident"). A
    release skipped by the runtime alone gives the same gradients (the
    recomputation overwrites the record): the states test below catches
    that."""
    path = _schedule(files, name, algorithm)
    want, twin, x, target, counts = plain_and_counted_twin(name, SEED)
    step = remat_torch.checkpointed(twin, path)
    torch.manual_seed(SEED)
    got = snapshot(twin, step(x, target))
    _assert_plain(got, want, f"{name} {algorithm}")
    sched = load_schedule(path)
    assert counts == sched.forwards_per_stage(len(counts) - 1), counts
    # Released tensors are recomputed: the step really exercises that.
    assert sum(counts) > len(counts) - 1, f"{algorithm}: recomputes nothing"


@pytest.mark.parametrize("name,algorithm", CASES)
def test_release_states_equal_the_simulator(files, name, algorithm):
    """The validator's logical replay and the runtime's own bookkeeping
    (read from the storages it holds) both equal `remat simulate --json
    --states` after every op. Fails if a release leaves the tensor listed
    (mutations tried: release a no-op in `validate` → the validator's states
    keep ā^ℓ after the R op, and the schedule is then refused at the
    recomputing F_all ("is already resident"); release a no-op in the
    runtime (`Step.release` not popping the record) → the runtime's states
    keep ā^ℓ on the device, all 8 cases fail), or if it forgets something
    else."""
    path = _schedule(files, name, algorithm)
    sim = _sim(simulator_states(files[name]["chain"], path))
    L = len(NETWORKS[name]()[0])
    assert validate(load_schedule(path).ops, L) == sim
    _, twin, x, target, _ = plain_and_counted_twin(name, SEED)
    step = remat_torch.checkpointed(twin, path)
    torch.manual_seed(SEED)
    step(x, target)
    assert len(step.last_states) == len(sim)
    for got, want in zip(step.last_states, sim):
        assert got == want, f"{name} {algorithm} after op {got['op']}"


# --- hand-written schedules ------------------------------------------------


def _doc(ops: List[dict], stages: int) -> dict:
    return {"format": "remat-schedule/1", "chain_name": "hand", "algorithm": "hand", "stages": stages,
            "budget_bytes": 10**9, "predicted": {"makespan_seconds": 0, "peak_bytes": 0}, "ops": ops}


def _f(kind: str, l: int) -> dict:
    return {"op": kind, "stage": l}


def _t(kind: str, l: int, tensor: str) -> dict:
    return {"op": kind, "stage": l, "tensor": tensor}


def _release_and_recompute(L: int, k: int, offload_first: bool) -> List[dict]:
    """Store-all with ā^k forgotten once F_all^{k+1} has read it: released
    from the device, or (offload_first) offloaded and its host copy
    released. Before B^{k+1}, F_ck^k recomputes a^k (the input B^{k+1}
    reads; the graph of F_all^{k+1} ran on the forgotten ā^k); before B^k,
    F_all^k recomputes ā^k from ā^{k-1}."""
    ops = [_f("forward_all", l) for l in range(1, k + 2)]
    if offload_first:
        ops += [_t("offload", k, "saved"), _f("forward_all", k + 2), _t("release", k, "saved")]
        start = k + 3
    else:
        ops += [_t("release", k, "saved")]
        start = k + 2
    ops += [_f("forward_all", l) for l in range(start, L + 1)]
    ops += [_f("backward", l) for l in range(L, k + 1, -1)]
    ops += [_f("forward_checkpoint", k), _f("backward", k + 1), _f("forward_all", k), _f("backward", k)]
    ops += [_f("backward", l) for l in range(k - 1, 0, -1)]
    return ops


@pytest.mark.parametrize("offload_first", [False, True], ids=["device-copy", "host-copy"])
def test_released_saved_is_freed_and_recomputed(files, tmp_path, offload_first):
    """mlp, k = 2: stage 3 (Linear) saves its input — ā^2's output — for
    B^3. R(ā^2) after F_all^3 must free that memory although stage 3's
    graph and input alias still view it, and B^3 must then read the
    recomputed a^2; with offload_first the host copy is what is released.
    Checked: the simulator accepts the list and its states equal the
    validator's and the runtime's; gradients equal the plain step's; and
    the storage stage 3 ran on holds 0 bytes when stage 4 runs (a
    pre-hook; after the release, or with offload_first after the offload).
    Fails if the release only drops the wrapper's reference (mutation
    tried: `Moved.release` not resizing the storages → the device-copy
    case sees the storage still holding its bytes when stage 4 runs), or
    if a host copy's release leaves it on the host (mutation tried: the
    validator's release ignoring host copies → the host-copy case is
    refused at the recomputing F_all^2: "already has a copy on the
    host")."""
    name, k = "mlp", 2
    net, x, target = NETWORKS[name]()
    L = len(net)
    ops = _release_and_recompute(L, k, offload_first)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(_doc(ops, L)))
    chain = files[name]["chain"]
    p = remat("simulate", str(chain), str(path), check=False)
    assert p.returncode == 0, p.stderr
    sim = _sim(simulator_states(chain, path))
    assert validate(load_schedule(path).ops, L) == sim
    r = ops.index(_t("release", k, "saved"))
    assert f"ā^{k}" not in sim[r]["device"] + sim[r]["host"]
    assert (f"ā^{k}" in sim[r - 1]["host"]) == offload_first

    twin = copy.deepcopy(net)
    torch.manual_seed(SEED)
    want = plain_step(net, x, target)
    seen: List = []  # the storage stage k+1 first ran on
    after: List[int] = []  # its bytes whenever stage k+2 runs
    twin[k].register_forward_pre_hook(lambda m, i: seen.append(i[0].untyped_storage()) if not seen else None)
    twin[k + 1].register_forward_pre_hook(lambda m, i: after.append(seen[0].nbytes()))
    step = remat_torch.checkpointed(twin, _doc(ops, L))
    torch.manual_seed(SEED)
    got = snapshot(twin, step(x, target))
    _assert_plain(got, want, f"release ā^{k}")
    assert step.last_states == sim
    assert after == [0], f"the released ā^{k} still holds {after} bytes when F_all^{k + 2} runs"


# --- refusals ----------------------------------------------------------------


def _refused(net, schedule) -> str:
    with pytest.raises(ScheduleError) as e:
        remat_torch.checkpointed(net, schedule)
    assert all(p.grad is None for p in net.parameters()), "a refused schedule ran something"
    return str(e.value)


def _simulator_says(chain: Path, path: Path) -> str:
    """The error line of `remat simulate` (a hand-written file has no
    chain digest: a warning line comes first)."""
    p = remat("simulate", str(chain), str(path), check=False)
    assert p.returncode == 2, p.stdout
    return p.stderr.strip().splitlines()[-1]


def _store_all(L: int) -> List[dict]:
    return [_f("forward_all", l) for l in range(1, L + 1)] + [_f("backward", l) for l in range(L, 0, -1)]


def _bad_releases(L: int) -> Dict[str, tuple]:
    """label: (op list, a fragment the message must contain)."""
    sa = _store_all(L)
    return {
        # a^3 is never computed by store-all: nothing to release.
        "never-computed": ([_t("release", 3, "output")] + sa,
                           "op 0 (R(a^3)): a^3 is neither on the device nor on the host: there is nothing to release"),
        # The second R(ā^2) finds it gone.
        "twice": (sa[:3] + [_t("release", 2, "saved"), _t("release", 2, "saved")] + sa[3:],
                  "op 4 (R(ā^2)): ā^2 is neither on the device nor on the host: there is nothing to release"),
        "saved-of-stage-0": ([_t("release", 0, "saved")] + sa, "op 0 (R(ā^0)): stage 0 has no ā"),
        "stage-out-of-range": ([_t("release", L + 1, "output")] + sa,
                               f"op 0 (R(a^{L + 1})): stage {L + 1} does not exist: stages are numbered 0..={L}"),
        # B^L reads ā^L, released just before it and not recomputed.
        "read-after-release": (sa[:L] + [_t("release", L, "saved")] + sa[L:],
                               f"op {L + 1} (B^{L}): ā^{L} is not resident: it was freed by op {L}"),
        # a^0 cannot be made again: F_all^1 reads the released batch.
        "batch": ([_t("release", 0, "output")] + sa,
                  "op 1 (F_all^1): a^0 is not resident: it was freed by op 0"),
    }


@pytest.mark.parametrize("label", list(_bad_releases(10)))
def test_bad_releases_are_refused_like_the_simulator(files, tmp_path, label):
    """Each bad release (or a read after one) is refused before anything
    runs, with a message naming the op, equal word for word to what
    `remat simulate` prints after `error: `. Fails if the validator accepts
    a release the simulator refuses or words it otherwise (mutations
    tried: the "nothing to release" check removed from `validate` → the
    never-computed and twice cases are accepted; release forgetting to
    record which op freed the tensor (`by` left unset) → read-after-release
    says "it was never computed" instead of "freed by op 10")."""
    net, _, _ = NETWORKS["mlp"]()
    L = len(net)
    ops, fragment = _bad_releases(L)[label]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_doc(ops, L)))
    msg = _refused(net, path)
    assert fragment in msg, msg
    assert _simulator_says(files["mlp"]["chain"], path) == f"error: {msg}"


def test_malformed_releases_are_named():
    """A release names its tensor like a transfer; the field is named when
    it is missing, wrong or extra. Fails if release is parsed without its
    tensor (mutation tried: "release" left out of ON_A_TENSOR → the extra
    field "tensor" is refused)."""
    net, _, _ = NETWORKS["mlp"]()
    bad = {"format": "remat-schedule/1", "ops": [{"op": "release", "stage": 1}]}
    assert _refused(net, bad).startswith("ops[0].tensor: expected \"output\" (a^ℓ) or \"saved\" (ā^ℓ)")
    bad["ops"] = [{"op": "release", "stage": 1, "tensor": "both"}]
    assert _refused(net, bad).startswith("ops[0].tensor: expected")
    bad["ops"] = [{"op": "release", "stage": 1, "tensor": "saved", "bytes": 4}]
    assert _refused(net, bad).startswith("ops[0].bytes: unknown field for a release operation")


# --- random edits ------------------------------------------------------------

KINDS = ["forward_all", "forward_checkpoint", "forward_none", "backward", "offload", "prefetch", "release"]
ON_A_TENSOR = ("offload", "prefetch", "release")


def _op(kind: str, stage: int, rng: random.Random) -> dict:
    op = {"op": kind, "stage": stage}
    if kind in ON_A_TENSOR:
        op["tensor"] = rng.choice(["output", "saved"])
    return op


def _mutate(ops: List[dict], rng: random.Random, L: int) -> List[dict]:
    """One random edit, weighted toward releases: insert a release of a
    random tensor, drop an op (often a release), move a release a few
    places, swap two ops, duplicate one, or change an op's kind, stage or
    tensor."""
    ops = [dict(o) for o in ops]
    i = rng.randrange(len(ops))
    releases = [k for k, o in enumerate(ops) if o["op"] == "release"]
    edit = rng.randrange(8)
    if edit <= 1:
        ops.insert(i, _op("release", rng.randrange(0, L + 1), rng))
    elif edit == 2:
        del ops[rng.choice(releases) if releases and rng.random() < 0.5 else i]
    elif edit == 3 and releases:
        k = rng.choice(releases)
        op = ops.pop(k)
        ops.insert(min(max(k + rng.randint(-3, 3), 0), len(ops)), op)
    elif edit == 4:
        j = rng.randrange(len(ops))
        ops[i], ops[j] = ops[j], ops[i]
    elif edit == 5:
        ops.insert(i, dict(ops[i]))
    elif edit == 6:
        ops[i] = _op(rng.choice(KINDS), ops[i]["stage"], rng)
    else:
        ops[i]["stage"] = rng.randrange(0, L + 2)
    return ops


def _release_and_remake(ops: List[dict], states: List[dict], rng: random.Random) -> List[dict]:
    """Before a random op i, forget a tensor that is on the device or the
    host there (from the schedule's own states) and make it again at once:
    R(ā^ℓ) F_all^ℓ, or R(a^ℓ) F_ck^ℓ — valid when stage ℓ's input is on
    the device and, for a host copy, when nothing needed it on the host.
    Random edits alone almost never give a valid list (about 2 %); these
    make a fifth of the cases valid, so the runtime runs releases at many
    places. (A re-made a^ℓ that was a checkpoint is a plain one now, which
    a later F_∅^{ℓ+1} frees; that is the forward's doing, not the
    release's: clearing the flag in the release is unobservable.)"""
    i = rng.randrange(1, len(ops))
    here = [t for t in states[i - 1]["device"] + states[i - 1]["host"] if t[0] in "aā" and t != "a^0"]
    if not here:
        return ops
    sym, l = rng.choice(here).split("^")
    saved = sym == "ā"
    remake = {"op": "forward_all" if saved else "forward_checkpoint", "stage": int(l)}
    release = {"op": "release", "stage": int(l), "tensor": "saved" if saved else "output"}
    return ops[:i] + [release, remake] + ops[i:]


@pytest.mark.parametrize("name", list(NETWORKS))
def test_validator_agrees_with_the_simulator_on_edited_release_schedules(files, tmp_path, name):
    """200 random edits (seeded) of the dtr and delta schedules above:
    whenever `remat simulate` refuses one, the wrapper refuses it with the
    same message; whenever it accepts one, so does the wrapper, with the
    same states after each op; and the accepted ones also run in the
    runtime, with the plain step's gradients and the simulator's states.
    Fails on any release rule not mirrored. Mutations tried, each failing
    both networks: release allowed at stage 0 only for transfers (`lowest`
    from TRANSFERS: "stage 0 does not exist" where the simulator says
    otherwise); the "nothing to release" check removed; the release not
    recording which op freed the tensor (a later read "was never
    computed"); the release of a host copy ignored. Not caught, because
    it cannot be seen: the release keeping a checkpoint flag (see
    `_release_and_remake`)."""
    L = len(NETWORKS[name]()[0])
    chain = files[name]["chain"]
    net, x, target = NETWORKS[name]()
    pristine = copy.deepcopy(net)
    torch.manual_seed(SEED)
    want = plain_step(net, x, target)
    bases = []
    for a in RUNTIMES:
        path = _schedule(files, name, a)
        bases.append((json.loads(path.read_text()), _sim(simulator_states(chain, path))))
    rng = random.Random(7)
    refused = accepted = 0
    for case in range(200):
        base, base_states = rng.choice(bases)
        doc = dict(base)
        ops = doc["ops"]
        if rng.random() < 0.5:
            ops = _release_and_remake(ops, base_states, rng)
        for _ in range(rng.randrange(0 if ops is not doc["ops"] else 1, 3)):
            ops = _mutate(ops, rng, L)
        doc["ops"] = ops
        # An op list edited by hand no longer has the solver's frees (they
        # name op indices: `offload_frees`, checked apart in formats.rs).
        doc.pop("offload_frees", None)
        path = tmp_path / "case.json"
        path.write_text(json.dumps(doc))
        states = same_verdict(chain, path, L, case)
        if states is None:
            refused += 1
            continue
        accepted += 1
        twin = copy.deepcopy(pristine)
        step = remat_torch.checkpointed(twin, doc)
        torch.manual_seed(SEED)
        _assert_plain(snapshot(twin, step(x, target)), want, f"{name} case {case}")
        assert step.last_states == states, f"case {case}"
    assert refused > 30 and accepted > 20, (refused, accepted)


def test_backward_reads_the_input_resident_then(files, tmp_path):
    """The simulator's B^ℓ reads whichever of a^{ℓ-1}, ā^{ℓ-1} is on the
    device; F_all^ℓ may have run on the other one. Here (mlp, ℓ = 3) F_all^3
    ran on ā^2, which is offloaded after it; F_ck^2 makes a^2 for B^3, and
    ā^2 comes back for B^2. Before release support the wrapper refused this
    at B^3 with a RuntimeError (its graph held the offloaded storage); the
    same mechanism now serves releases, and this list must run with the
    plain step's gradients and the simulator's states. Mutation tried: the
    graph keeping the input tensor it ran on (no `InputView`) → B^3 fails
    reading the storage the offload resized to 0."""
    name, k = "mlp", 3
    net, x, target = NETWORKS[name]()
    L = len(net)
    ops = [_f("forward_all", l) for l in range(1, k + 1)] + [_t("offload", k - 1, "saved")]
    ops += [_f("forward_all", l) for l in range(k + 1, L + 1)]
    ops += [_f("backward", l) for l in range(L, k, -1)]
    ops += [_f("forward_checkpoint", k - 1), _f("backward", k), _t("prefetch", k - 1, "saved")]
    ops += [_f("backward", l) for l in range(k - 1, 0, -1)]
    path = tmp_path / "s.json"
    path.write_text(json.dumps(_doc(ops, L)))
    chain = files[name]["chain"]
    sim = _sim(simulator_states(chain, path))
    assert validate(load_schedule(path).ops, L) == sim
    b = ops.index(_f("backward", k))
    assert f"a^{k - 1}" in sim[b - 1]["device"] and f"ā^{k - 1}" in sim[b - 1]["host"]
    twin = copy.deepcopy(net)
    torch.manual_seed(SEED)
    want = plain_step(net, x, target)
    step = remat_torch.checkpointed(twin, path)
    torch.manual_seed(SEED)
    _assert_plain(snapshot(twin, step(x, target)), want, "B^3 on a recomputed a^2")
    assert step.last_states == sim
