"""`remat export --to pytorch-segments`: the snippet it prints, run as a
user would paste it, is the schedule — same loss and parameter gradients as
a plain step, and each stage's forward run as many times as the schedule
says — and schedules it cannot express are refused, naming the op.

The snippet uses `torch.utils.checkpoint.checkpoint(..., use_reentrant=False)`
with early stop off (the whole segment is recomputed, as the schedule says),
which restores the RNG state for the recomputation (dropout masks match) but
updates BatchNorm running statistics a second time when it recomputes a
BatchNorm stage; buffers are therefore not compared here (remat_torch keeps
them as a plain step does: test_schedules.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from remat_torch.schedule import load_schedule

from helpers import NETWORKS, budgets_above_floor, chain_for, plain_and_counted_twin, remat, snapshot, solve

SEED = 4321


def _export(schedule: Path):
    return remat("export", str(schedule), "--to", "pytorch-segments", "--json", check=False)


def _run_snippet(name: str, snippet: str):
    """The plain step and the pasted snippet's step on two copies of one
    network, from the same RNG state; forward hooks count the snippet's
    module calls."""
    want, twin, x, target, counts = plain_and_counted_twin(name, SEED)
    scope: dict = {}
    exec(compile(snippet, "<remat export snippet>", "exec"), scope)
    torch.manual_seed(SEED)
    loss = scope["forward_loss"](twin, x, target)
    loss.backward()
    return want, snapshot(twin, loss), counts


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_exported_snippets_run_the_schedule(name, tmp_path):
    """Fails if the segments read off a schedule are not the ones it runs
    (a stage counted in the wrong segment: the forward counts differ), if
    the snippet's ranges are off by one (model[start:end] against 1-based
    stages: counts or gradients differ), or if the snippet loses the target
    or the loss. Mutation tried: `snippet` writing `s.first` instead of
    `s.first - 1` as the start (stage 1 never runs, stages run twice in
    forward: both networks fail). Found while writing it: PyTorch's
    checkpoint stops a recomputation early once the last saved tensor is
    back, so a trailing stage's forward ran once, not twice — the snippet
    turns that off to run exactly the schedule."""
    net, x, target = NETWORKS[name]()
    chain = tmp_path / "chain.json"
    chain.write_text(json.dumps(chain_for(name, net, x, target)))
    ref = solve(chain, tmp_path / "ref.json", "-a", "rotor", "-b", "100%")
    m_low, m_high = ref["m_low_bytes"], ref["m_high_bytes"]
    cases = [
        ("store-all", ["-a", "store-all", "-b", "100%"]),
        ("sequential-2", ["-a", "sequential", "--segments", "2", "-b", "100%"]),
        ("sequential-3", ["-a", "sequential", "--segments", "3", "-b", "100%"]),
    ]
    # Rotor schedules over α: those that are plain segments are exported
    # and must run; those that nest recomputations are refused.
    for i in range(11):
        budget = m_low + (m_high - m_low) * i // 10
        cases.append((f"rotor-{budget}", ["-a", "rotor", "-b", str(budget)]))
    exported, nested = 0, 0
    for label, args in cases:
        path = tmp_path / f"{label}.json"
        solve(chain, path, *args)
        p = _export(path)
        if p.returncode != 0:
            assert p.returncode == 2, p.stderr
            assert "remat_torch" in p.stderr, p.stderr
            assert not label.startswith(("store-all", "sequential")), p.stderr
            nested += 1
            continue
        exported += 1
        snippet = json.loads(p.stdout)["snippet"]
        want, got, counts = _run_snippet(name, snippet)
        assert torch.equal(got["loss"], want["loss"]), label
        for param in want["grads"]:
            assert torch.equal(got["grads"][param], want["grads"][param]), f"{label}: {param}"
        sched = load_schedule(path)
        assert counts == sched.forwards_per_stage(len(counts) - 1), (label, counts)
    assert exported >= 3
    # At M_low rotor recomputes with nested checkpoints on these chains.
    assert nested >= 1, "no rotor schedule was refused: the refusal is untested here"


@pytest.mark.parametrize("name", sorted(NETWORKS))
@pytest.mark.parametrize("algorithm,model", [("hong", "pytorch"), ("hong-chen", "chen")])
def test_hong_sets_export_as_their_segments_and_run(name, algorithm, model, tmp_path):
    """`remat solve -a hong` (or hong-chen) gives the schedule of the set
    `remat checkpoints` finds; it exports as one segment per checkpoint,
    ending at it, every one but the last checkpointed; the pasted snippet
    gives the plain step's loss and gradients and runs each stage's forward
    as often as the schedule says. Fails if the solver's schedule were not
    the set's (segments end elsewhere), or the export refused it.
    Mutation tried: the planner scheduling the √n set instead of the
    optimal one (`hong::plan`: the segments' ends differ from the set)."""
    net, x, target = NETWORKS[name]()
    chain = tmp_path / "chain.json"
    chain.write_text(json.dumps(chain_for(name, net, x, target)))
    path = tmp_path / f"{algorithm}.json"
    report = solve(chain, path, "-a", algorithm, "-b", "100%")
    assert report["feasible"], report["detail"]
    found = json.loads(remat("checkpoints", str(chain), "--model", model, "--json").stdout)
    p = _export(path)
    assert p.returncode == 0, p.stderr
    exported = json.loads(p.stdout)
    segments = exported["segments"]
    assert [s["last"] for s in segments] == found["checkpoints"]
    assert [s["checkpointed"] for s in segments] == [True] * (len(segments) - 1) + [False]
    want, got, counts = _run_snippet(name, exported["snippet"])
    assert torch.equal(got["loss"], want["loss"])
    for param in want["grads"]:
        assert torch.equal(got["grads"][param], want["grads"][param]), f"{algorithm}: {param}"
    sched = load_schedule(path)
    assert counts == sched.forwards_per_stage(len(counts) - 1), counts
    assert sum(counts) > len(counts) - 1, "the set's schedule recomputes nothing"


def test_offloading_schedules_are_refused_naming_the_op(tmp_path):
    """Fails if an offloading schedule is exported as segments (it would
    run without its transfers, over its budget). Mutation tried: the
    transfer check removed (pofo's schedule then differs from its segments
    and is refused with another message: the assertion on the message
    fails)."""
    net, x, target = NETWORKS["mlp"]()
    chain = tmp_path / "chain.json"
    chain.write_text(json.dumps(chain_for("mlp", net, x, target)))
    for b in budgets_above_floor(chain, range(10, 100, 5)):
        path = tmp_path / f"pofo-{b}.json"
        report = solve(chain, path, "-a", "pofo", "-b", b, "--bandwidth", "12GB/s")
        if report["feasible"] and any(o.kind == "offload" for o in load_schedule(path).ops):
            p = _export(path)
            assert p.returncode == 2
            assert "torch.utils.checkpoint cannot offload" in p.stderr, p.stderr
            return
    pytest.fail("pofo offloads at no budget: the refusal is untested")
