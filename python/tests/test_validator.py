"""The wrapper's schedule check against the simulator on many broken
schedules: the same verdict, word for word."""

from __future__ import annotations

import json
import random

import pytest

from remat_torch import ScheduleError
from remat_torch.schedule import load_schedule, validate

from helpers import NETWORKS, budgets_above_floor, chain_for, remat, simulator_states, solve

KINDS = ["forward_all", "forward_checkpoint", "forward_none", "backward", "offload", "prefetch"]


def _mutate(ops: list, rng: random.Random, L: int) -> list:
    """One random edit of an op list: drop, duplicate, swap two ops, change
    an op's kind, stage or tensor, insert a random op, turn a forward into
    another kind of forward (where checkpoints are made and dropped), or
    move an a^ℓ to the host and back around a stretch of the list (where a
    checkpoint's flag must survive the trip)."""
    ops = [dict(o) for o in ops]
    i = rng.randrange(len(ops))
    edit = rng.randrange(9)
    if edit >= 6:
        forwards = [k for k, o in enumerate(ops) if o["op"].startswith("forward")]
        if edit <= 7 and forwards:
            k = rng.choice(forwards)
            ops[k]["op"] = rng.choice([f for f in KINDS[:3] if f != ops[k]["op"]])
            return ops
        j = rng.randrange(i, len(ops))
        stage = rng.randrange(0, L)
        ops.insert(j + 1, {"op": "prefetch", "stage": stage, "tensor": "output"})
        ops.insert(i + 1, {"op": "offload", "stage": stage, "tensor": "output"})
        return ops
    if edit == 0:
        del ops[i]
    elif edit == 1:
        ops.insert(i, dict(ops[i]))
    elif edit == 2:
        j = rng.randrange(len(ops))
        ops[i], ops[j] = ops[j], ops[i]
    elif edit == 3:
        kind = rng.choice(KINDS)
        ops[i] = {"op": kind, "stage": ops[i]["stage"]}
        if kind in ("offload", "prefetch"):
            ops[i]["tensor"] = rng.choice(["output", "saved"])
    elif edit == 4:
        ops[i]["stage"] = rng.randrange(0, L + 2)
    else:
        kind = rng.choice(KINDS)
        op = {"op": kind, "stage": rng.randrange(0, L + 1)}
        if kind in ("offload", "prefetch"):
            op["tensor"] = rng.choice(["output", "saved"])
        ops.insert(i, op)
    return ops


@pytest.mark.parametrize("name", list(NETWORKS))
def test_validator_agrees_with_the_simulator(tmp_path, name):
    """300 random edits of rotor and pofo schedules (seeded): whenever the
    simulator refuses one, the wrapper refuses it with the same message;
    whenever the simulator accepts one, so does the wrapper, and the states
    after each op agree (when `remat simulate --states` exists). Fails on
    any rule of the simulator not mirrored (mutations tried: F_∅ freeing a
    checkpoint, and "already resident" not checked for F_all's ā^ℓ — each
    gave a differing verdict within the 300 cases; prefetch forgetting the
    checkpoint flag did not, hence the test below)."""
    net, x, target = NETWORKS[name]()
    chain = tmp_path / "chain.json"
    chain.write_text(json.dumps(chain_for(name, net, x, target)))
    L = len(net)
    bases = []
    ref = solve(chain, tmp_path / "r.json", "-a", "rotor", "-b", "100%")
    solve(chain, tmp_path / "r.json", "-a", "rotor", "-b", str(ref["m_low_bytes"]))
    bases.append(json.loads((tmp_path / "r.json").read_text()))
    for b in budgets_above_floor(chain, (30, 50, 70)):
        report = solve(chain, tmp_path / "p.json", "-a", "pofo", "-b", b)
        if report["feasible"]:
            bases.append(json.loads((tmp_path / "p.json").read_text()))
    rng = random.Random(11)
    refused = accepted = 0
    for case in range(300):
        doc = dict(rng.choice(bases))
        ops = doc["ops"]
        for _ in range(rng.randrange(1, 3)):
            ops = _mutate(ops, rng, L)
        doc["ops"] = ops
        # An op list edited by hand no longer has the solver's frees (they
        # name op indices: `offload_frees`, checked apart in formats.rs).
        doc.pop("offload_frees", None)
        path = tmp_path / "case.json"
        path.write_text(json.dumps(doc))
        p = remat("simulate", str(chain), str(path), check=False)
        try:
            states = validate(load_schedule(path).ops, L)
            mine = None
        except ScheduleError as e:
            mine = str(e)
        if p.returncode == 0:
            accepted += 1
            assert mine is None, f"case {case}: the simulator accepts, the wrapper says {mine}"
            sim = simulator_states(chain, path)
            if sim is not None:
                assert states == [{"op": s["op"], "device": s["device"], "host": s["host"]} for s in sim]
        else:
            refused += 1
            assert mine is not None, f"case {case}: the simulator refuses: {p.stderr}"
            assert p.stderr.strip() == f"error: {path}: invalid schedule: {mine}", (case, p.stderr, mine)
    assert refused > 30 and accepted >= 5, (refused, accepted)


def _checkpoint_round_trip(L: int) -> list:
    """F_ck^1 makes a^0 a checkpoint; a^0 goes to the host and back; F_∅^1
    must then keep it (it is still a checkpoint), because F_all^1 reads it
    before B^1. Stage 2 onwards is store-all, with a^2 and ā^2 both resident
    for a while (B^3 reads a^2, the input it prefers)."""
    f = lambda kind, l: {"op": kind, "stage": l}
    ops = [f("forward_checkpoint", 1), f("forward_none", 2),
           {"op": "offload", "stage": 0, "tensor": "output"},
           {"op": "prefetch", "stage": 0, "tensor": "output"},
           f("forward_none", 1)]
    ops += [f("forward_all", l) for l in range(2, L + 1)]
    ops += [f("backward", l) for l in range(L, 1, -1)]
    ops += [f("forward_all", 1), f("backward", 1)]
    return ops


@pytest.mark.parametrize("name", list(NETWORKS))
def test_a_checkpoint_stays_one_across_a_transfer(tmp_path, name):
    """The simulator keeps a tensor's checkpoint flag through an offload and
    a prefetch; so must the wrapper's check and its runtime. Fails if the
    flag is lost on the way back (mutation tried: prefetch resetting the
    flag in validate → the simulator accepts, the wrapper refuses; the
    same in the runtime → a^0 dropped by F_∅^1, and F_all^1 finds no input:
    RuntimeError), and the step's gradients must still be the plain step's."""
    import copy

    import torch

    import remat_torch
    from helpers import plain_step, snapshot

    net, x, target = NETWORKS[name]()
    chain = tmp_path / "chain.json"
    chain.write_text(json.dumps(chain_for(name, net, x, target)))
    doc = {"format": "remat-schedule/1", "chain_name": "hand", "algorithm": "hand",
           "budget_bytes": 10**9, "predicted": {"makespan_seconds": 0, "peak_bytes": 0},
           "ops": _checkpoint_round_trip(len(net))}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    p = remat("simulate", str(chain), str(path), check=False)
    assert p.returncode == 0, p.stderr
    states = validate(load_schedule(path).ops, len(net))
    sim = simulator_states(chain, path)
    if sim is not None:
        assert states == [{"op": s["op"], "device": s["device"], "host": s["host"]} for s in sim]
    twin = copy.deepcopy(net)
    torch.manual_seed(4)
    want = plain_step(net, x, target)
    torch.manual_seed(4)
    step = remat_torch.checkpointed(twin, doc)
    got = snapshot(twin, step(x, target))
    assert torch.equal(got["loss"], want["loss"])
    for k in want["grads"]:
        assert torch.equal(got["grads"][k], want["grads"][k]), k
    assert step.last_states == states
