"""Schedules that must not run: for another chain, truncated, or reading a
tensor that is not on the device. Each is refused when the step is built,
before any forward, with the simulator's own message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import remat_torch
from remat_torch import ScheduleError

from helpers import NETWORKS, budgets_above_floor, chain_for, remat, solve


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("refusals")
    out = {}
    for name, make in NETWORKS.items():
        net, x, target = make()
        chain = root / f"{name}.chain.json"
        chain.write_text(json.dumps(chain_for(name, net, x, target)))
        rotor = root / f"{name}.rotor.json"
        ref = solve(chain, rotor, "-a", "rotor", "-b", "100%")
        solve(chain, rotor, "-a", "rotor", "-b", str(ref["m_low_bytes"]))
        pofo = None
        for b in budgets_above_floor(chain, range(10, 100, 5)):
            p = root / f"{name}.pofo.json"
            report = solve(chain, p, "-a", "pofo", "-b", b, "--bandwidth", "12GB/s")
            if report["feasible"] and any(o["op"] == "prefetch" for o in json.loads(p.read_text())["ops"]):
                pofo = p
                break
        assert pofo is not None
        out[name] = {"chain": chain, "rotor": rotor, "pofo": pofo}
    return out


def _edited(src: Path, dst: Path, edit) -> Path:
    doc = json.loads(src.read_text())
    edit(doc)
    dst.write_text(json.dumps(doc))
    return dst


def _simulator_error(chain: Path, schedule: Path) -> str:
    p = remat("simulate", str(chain), str(schedule), check=False)
    assert p.returncode == 2, p.stdout
    return p.stderr


def _refused(net, schedule) -> str:
    with pytest.raises(ScheduleError) as e:
        remat_torch.checkpointed(net, schedule)
    assert all(p.grad is None for p in net.parameters()), "a refused schedule ran something"
    return str(e.value)


def test_schedule_of_another_chain_is_refused(files, tmp_path):
    """Fails if the stage count is not checked: the mlp's schedule (10
    stages) on the cnn (12) is a valid-looking op list that never runs the
    cnn's last two stages' backward. Mutation tried: `check()` not called
    in Checkpointed.__init__ → no error raised."""
    cnn, _, _ = NETWORKS["cnn"]()
    msg = _refused(cnn, files["mlp"]["rotor"])
    assert "the network has 12" in msg and "10" in msg, msg
    mlp, _, _ = NETWORKS["mlp"]()
    msg = _refused(mlp, files["cnn"]["rotor"])
    assert "the network has 10" in msg and "12" in msg, msg
    # With the "stages" field `remat solve` writes, the message names it.
    sched = _edited(files["mlp"]["rotor"], tmp_path / "s.json", lambda d: d.update(stages=11))
    msg = _refused(mlp, sched)
    assert msg.startswith(f"{sched}: stages: the schedule was made for a chain of 11 stages") or \
        msg.startswith("stages: the schedule was made for a chain of 11 stages"), msg
    assert "the network has 10" in msg


@pytest.mark.parametrize("name", list(NETWORKS))
def test_truncated_schedule_is_refused(files, tmp_path, name):
    """Fails if completeness is not checked: without its last op (B^1) the
    step would return a loss with the first stage's gradients missing.
    Mutation tried: the `backwards_done < n` check removed from validate →
    the step runs and the test fails on the missing ScheduleError."""
    net, _, _ = NETWORKS[name]()
    sched = _edited(files[name]["rotor"], tmp_path / "t.json", lambda d: d["ops"].pop())
    msg = _refused(net, sched)
    assert "missing: the schedule ends after" in msg and "without running B^1" in msg, msg
    assert _simulator_error(files[name]["chain"], sched).strip() == f"error: {msg}"


@pytest.mark.parametrize("name", list(NETWORKS))
def test_read_of_a_tensor_never_computed_is_refused(files, tmp_path, name):
    """Drops the first forward of stage 2: the next forward of stage 3 (or
    B^2) reads a^2/ā^2, which was never computed. Fails if inputs are not
    validated before running (mutation tried: validate's `input_of()`
    falling back to a^{ℓ-1} when nothing is resident → no ScheduleError,
    the runtime fails later with a RuntimeError). The message must be the
    simulator's, word for word."""
    net, _, _ = NETWORKS[name]()

    def drop(d):
        i = next(k for k, o in enumerate(d["ops"]) if o["op"].startswith("forward") and o["stage"] == 2)
        del d["ops"][i]

    sched = _edited(files[name]["rotor"], tmp_path / "r.json", drop)
    msg = _refused(net, sched)
    assert "is not resident: it was never computed" in msg, msg
    assert _simulator_error(files[name]["chain"], sched).strip() == f"error: {msg}"


@pytest.mark.parametrize("name", list(NETWORKS))
def test_read_of_an_offloaded_tensor_is_refused(files, tmp_path, name):
    """Drops pofo's first prefetch: the tensor stays on the host and the op
    that reads it is refused ("prefetch it first"), word for word as the
    simulator does. Mutation tried: validate's `input_of()` returning an
    ā^{ℓ-1} that is on the host as the input → the refusal comes one op
    later (B^5 reading ā^5, not B^6) and no longer equals the simulator's."""
    net, _, _ = NETWORKS[name]()

    def drop(d):
        i = next(k for k, o in enumerate(d["ops"]) if o["op"] == "prefetch")
        del d["ops"][i]

    sched = _edited(files[name]["pofo"], tmp_path / "p.json", drop)
    msg = _refused(net, sched)
    assert "is on the host (offloaded by op" in msg and "prefetch it first" in msg, msg
    assert _simulator_error(files[name]["chain"], sched).strip() == f"error: {msg}"


def test_malformed_operations_are_named():
    net, _, _ = NETWORKS["mlp"]()
    doc = {"format": "remat-schedule/1", "ops": [{"op": "forward_sometimes", "stage": 1}]}
    assert _refused(net, doc).startswith("ops[0].op: unknown operation 'forward_sometimes'")
    doc = {"format": "remat-schedule/1", "ops": [{"op": "offload", "stage": 1, "tensor": "both"}]}
    assert _refused(net, doc).startswith("ops[0].tensor: expected \"output\"")
    assert _refused(net, {"format": "remat-chain/1", "ops": []}).startswith("format: expected")


def _last_forward_all_to_none(d):
    L = max(o["stage"] for o in d["ops"])
    i = max(k for k, o in enumerate(d["ops"]) if o["op"] == "forward_all" and o["stage"] == L)
    d["ops"][i]["op"] = "forward_none"


def _first_checkpoint_to_none(d):
    i = next(k for k, o in enumerate(d["ops"]) if o["op"] == "forward_checkpoint")
    d["ops"][i]["op"] = "forward_none"


@pytest.mark.parametrize("name", list(NETWORKS))
@pytest.mark.parametrize(
    "edit,fragment",
    [
        (_last_forward_all_to_none, "is not resident: it was never computed"),
        (_first_checkpoint_to_none, "is not resident: it was freed by op"),
    ],
)
def test_reads_of_missing_saved_or_freed_tensors_are_refused(files, tmp_path, name, edit, fragment):
    """F_∅^L instead of F_all^L leaves B^L without ā^L; F_∅ instead of the
    first F_ck frees the checkpoint a later recomputation reads. Both must
    be refused with the simulator's exact message (op index, tensor, and
    which op freed it). Mutations tried: `read()` accepting any δ/ā (B^L
    then runs without ā^L: no ScheduleError); the "freed by op N" reason
    shortened to "freed" (the message no longer equals the simulator's)."""
    net, _, _ = NETWORKS[name]()
    sched = _edited(files[name]["rotor"], tmp_path / "e.json", edit)
    msg = _refused(net, sched)
    assert fragment in msg, msg
    assert _simulator_error(files[name]["chain"], sched).strip() == f"error: {msg}"
