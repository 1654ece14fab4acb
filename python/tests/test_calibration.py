"""The stages' times folded into whole steps (`remat_torch.calibration`):
a calibrated chain predicts the steps it was calibrated on, and every
plan's time is the same ops' stage-alone time scaled, plus the wrapper's
work per forward — read by the real solver and simulator."""

import random

import pytest
import torch
from torch import nn

import remat_torch
from remat_torch import calibration

from helpers import mlp, random_chain


def _stage_alone_seconds(chain: dict, ops: list) -> float:
    """A schedule without transfers, timed by hand on `chain`: each op's own
    time (what the simulator sums on one lane)."""
    total = 0.0
    for op in ops:
        st = chain["stages"][op["stage"] - 1]
        total += {"forward_all": st["forward_seconds"], "forward_checkpoint": st["forward_nograd_seconds"],
                  "forward_none": st["forward_nograd_seconds"], "backward": st["backward_seconds"]}[op["op"]]
    return total


def test_folded_times_predict_the_whole_steps_and_charge_every_forward():
    # How it could fail: `apply` leaving a field out (c not added to
    # F_∅'s time, B scaled twice) or `factors` dividing by 2L instead of L;
    # the store-all plan then misses max(P, W), or a rotor plan's time
    # misses s·(its stage-alone time) + c·(its forwards). Mutation run: the
    # `+ per_forward_seconds` on forward_nograd_seconds removed → the rotor
    # plans' times differ (F_ck and F_∅ uncharged), fails.
    rng = random.Random(42)
    checked_recomputing = 0
    for case in range(60):
        chain = random_chain(rng, rng.randint(3, 14))
        alone = {"stages": [dict(st) for st in chain["stages"]]}
        stage_sum = sum(st["forward_seconds"] + st["backward_seconds"] for st in chain["stages"])
        plain = stage_sum * rng.uniform(0.8, 1.3)
        wrapper = plain * rng.uniform(0.95, 1.2)
        f = calibration.factors(stage_sum, plain, wrapper, len(chain["stages"]))
        calibration.apply(chain["stages"], f["scale"], f["per_forward_seconds"])
        top = remat_torch.solve(chain, "store-all", "100%")
        assert top["predicted"]["makespan_seconds"] == pytest.approx(max(plain, wrapper), rel=1e-9), case
        plan = None
        for share in ("30%", "45%", "60%", "75%"):  # the lowest above the chain's floor
            try:
                plan = remat_torch.solve(chain, "rotor", share)
                break
            except ValueError:
                continue
        if plan is None:
            continue
        forwards = sum(op["op"] != "backward" for op in plan["ops"])
        want = f["scale"] * _stage_alone_seconds(alone, plan["ops"]) + forwards * f["per_forward_seconds"]
        assert plan["predicted"]["makespan_seconds"] == pytest.approx(want, rel=1e-9), case
        checked_recomputing += any(op["op"] in ("forward_checkpoint", "forward_none") for op in plan["ops"])
    # The cases must include plans that recompute, or F_∅'s charge is untested.
    assert checked_recomputing >= 20


def test_a_wrapper_faster_than_the_plain_step_adds_nothing():
    # How it could fail: a negative c (noise making W < P) would make each
    # recomputation look cheaper than running it. Mutation run: the max(0, …)
    # removed → per_forward_seconds < 0, fails (and the test above, where
    # a case draws W < P: store-all then predicts W, not max(P, W)).
    f = calibration.factors(1.0, 1.1, 1.05, 10)
    assert f == {"scale": pytest.approx(1.1), "per_forward_seconds": 0.0}
    # Over compiled stages: no plain step runs the same graphs.
    assert calibration.factors(1.0, None, 1.2, 10) == {"scale": pytest.approx(1.2), "per_forward_seconds": 0.0}


def test_describe_chain_folds_its_whole_steps(monkeypatch):
    # How it could fail: describe_chain calibrating on the wrong step (the
    # wrapper's time taken as the plain one) or leaving the chain's times
    # alone. The steps' times are fixed here (the real ones are noisy), so
    # the store-all prediction must be exactly W. Mutation run: `_calibrate`
    # passing the plain step's time as the wrapper's → c = 0 and store-all
    # predicts P = 0.05, fails.
    net, x, target = mlp()
    seen = {}

    def fixed_steps(plain, wrapper, reset, sync, repeat, report):
        # The real steps still run once: they must work on this model.
        reset()
        wrapper()
        reset()
        plain()
        reset()
        seen["ran"] = True
        return {"plain": 0.05, "wrapper": 0.06}

    monkeypatch.setattr(calibration, "whole_steps", fixed_steps)
    chain = remat_torch.describe_chain(net, x, target, progress=False)
    assert seen["ran"]
    assert "stage times calibrated to whole steps" in chain["source"]
    top = remat_torch.solve(chain, "store-all", "100%")
    assert top["predicted"]["makespan_seconds"] == pytest.approx(0.06, rel=1e-9)
    # The model's gradients are left as they were (none).
    assert all(p.grad is None for p in net.parameters())

    alone = remat_torch.describe_chain(net, x, target, progress=False, calibrate=False)
    assert "not calibrated" in alone["source"]


def test_the_whole_steps_run_on_the_stages_describe_chain_found(monkeypatch):
    # The real measurement, on a model whose stages were found (a loss
    # function given): both steps run, over the program describe_chain
    # found, and the chain says what it measured. How it could fail: the
    # wrapper finding the stages again (torch.export once more: seconds on
    # a real model, and over compiled stages a second compile). Mutation
    # run: `wrapper_step` without `step.adopt(...)` → the runtime stages the
    # model itself, `staged` == 1, fails.
    from remat_torch import staging

    staged = []
    real = staging.make_program
    monkeypatch.setattr(staging, "make_program", lambda *a, **k: staged.append(1) or real(*a, **k))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4))
    x, target = torch.randn(8, 16), torch.randint(0, 4, (8,))
    chain = remat_torch.describe_chain(model, x, target, loss=nn.functional.cross_entropy, progress=False, repeat=2)
    assert staged == []
    assert "plain step" in chain["source"] and "per forward for the wrapper" in chain["source"]
    top = remat_torch.solve(chain, "store-all", "100%")
    assert top["predicted"]["makespan_seconds"] > 0
