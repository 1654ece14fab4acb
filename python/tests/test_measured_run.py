"""A step recorded as `remat-run/1` (`Checkpointed.record_run`), read by
`remat simulate --measured`; and the batch checked against the plan's."""

from __future__ import annotations

import json
import warnings

import pytest
import torch

import remat_torch
from remat_torch import BatchMismatch

from helpers import mlp, remat, solve


def _chain(tmp_path):
    net, x, target = mlp()
    # Gradients outside: the small MLP's weights outweigh its activations,
    # and counted in the chain they leave no room between floor and M_high.
    chain = remat_torch.describe_chain(net, x, target, repeat=1, bandwidth_bytes_per_s=1e9, set_to_none=False)
    path = tmp_path / "chain.json"
    path.write_text(json.dumps(chain))
    return net, x, target, path


@pytest.mark.parametrize("algorithm", ["rotor", "pofo", "dtr"])
def test_a_recorded_run_is_read_by_remat_simulate_and_holds_the_plan(tmp_path, algorithm):
    """record_run's file is accepted by `remat simulate CHAIN SCHEDULE
    --measured RUN` (same ops, fields as docs/formats.md says), its highest
    peak is the plan's within 0.5 %, and the step left the model as it
    was (no .grad). Fails if the per-op boundaries drift (an op's memory
    booked to its neighbour: the simulator's peak op and the run's differ),
    if the free of a caller's batch offloaded as a^0 is miscounted on the
    CPU (the profiler reports no free of a block allocated before it
    started, or one with a stale size: mutation tried, `Meter.rehome` a
    no-op → pofo's run +6.4 % over its plan, or −6 % on a second run in
    one process), or if the file's fields
    drift from the Rust reader's (remat exits 2)."""
    net, x, target, chain = _chain(tmp_path)
    ref = solve(chain, tmp_path / "s.json", "-a", "store-all", "-b", "100%")
    floor, high = ref["floor_bytes"], ref["m_high_bytes"]
    low = ref["m_low_bytes"] if algorithm == "rotor" else floor
    budget = str(low + round(0.3 * (high - low)))
    report = solve(chain, tmp_path / "s.json", "-a", algorithm, "-b", budget)
    assert report["feasible"], report
    # One engine call per B: the chain's model op for op (joined backwards
    # book a run's memory at its first B: `join_backwards`).
    step = remat_torch.checkpointed(net, tmp_path / "s.json", join_backwards=False)
    step(x, target)
    for p in net.parameters():
        p.grad = None
    doc = step.record_run(x, target, tmp_path / "run.json", repeat=2, set_to_none=False)
    assert doc["format"] == "remat-run/1" and len(doc["ops"]) == len(step.schedule.ops)
    assert all(p.grad is None for p in net.parameters())
    out = remat("simulate", str(chain), str(tmp_path / "s.json"), "--measured", str(tmp_path / "run.json"), "--json")
    measured = json.loads(out.stdout)["measured"]
    assert abs(measured["peak_difference_percent"]) <= 0.5, measured


def test_a_batch_of_another_shape_is_refused_before_anything_runs(tmp_path):
    """`remat solve` copies the chain's `inputs` into the schedule; the
    wrapper refuses a batch of another shape or dtype naming the tensor,
    before any op runs (no .grad written), and runs a smaller batch only
    when asked, with a warning that the plan's memory is an upper bound.
    Mutation tried: the check removed → a batch of 32 runs under a plan for
    16 without a word (this test fails on `pytest.raises`)."""
    net, x, target, chain = _chain(tmp_path)
    solve(chain, tmp_path / "s.json", "-a", "rotor", "-b", "100%")
    assert json.loads((tmp_path / "s.json").read_text())["inputs"][0]["shape"] == [16, 32]
    step = remat_torch.checkpointed(net, tmp_path / "s.json")
    big = torch.randn(32, 32)
    with pytest.raises(BatchMismatch, match=r"batch: input is float32 \[32, 32\], the plan .* \[16, 32\]"):
        step(big, torch.randint(0, 10, (32,)))
    assert all(p.grad is None for p in net.parameters())
    with pytest.raises(BatchMismatch, match=r"batch: input is float64"):
        step(x.double(), target)
    small, small_target = x[:8].clone(), target[:8].clone()
    with pytest.raises(BatchMismatch, match="smaller_batch=True"):
        step(small, small_target)
    lenient = remat_torch.checkpointed(net, tmp_path / "s.json", smaller_batch=True)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        lenient(small, small_target)
    assert any("upper bound" in str(w.message) for w in seen), [str(w.message) for w in seen]
    # The chain given explicitly is the same check (hand-written schedules
    # carry no inputs).
    plan = json.loads((tmp_path / "s.json").read_text())
    del plan["inputs"]
    by_chain = remat_torch.checkpointed(net, plan, chain=chain)
    with pytest.raises(BatchMismatch):
        by_chain(big, torch.randint(0, 10, (32,)))
