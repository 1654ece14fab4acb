"""One model described several ways (`remat_torch.variants`): the chains'
times on one clock, and the plan predicted fastest among them — read by
the real solver and simulator."""

import random

import pytest
import torch
from torch import nn

import remat_torch
from remat_torch import variants

from helpers import random_chain


def _model():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 32),
                          nn.ReLU(), nn.Linear(32, 4))
    # A batch large enough that activations, not weights, set the peak:
    # plans below store-all's peak then exist.
    x, target = torch.randn(512, 16), torch.randint(0, 4, (512,))
    return model, x, target


class _Net(nn.Module):
    """A stem, four blocks, a head: glue that `join_glue` can join."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(16, 32)
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(32, 32), nn.Tanh()) for _ in range(4))
        self.head = nn.Linear(32, 4)

    def forward(self, x):
        x = self.stem(x).relu()
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def test_each_chain_predicts_its_store_all_step_timed_with_the_others(monkeypatch):
    # How it could fail: `rescale` not applied (each chain keeps the clock it
    # was described on), applied to one field only (B^ℓ left unscaled), or
    # the medians handed to the wrong chains. The rounds' medians are fixed
    # here (the real ones are noisy); the steps still run once each, so
    # every variant's store-all wrapper must work. Mutation run: the
    # `rescale(chain, seconds)` call removed → chain 0 predicts its own
    # calibration's 1.1 ms, not 50 ms, fails; medians reversed → fails.
    model, x, target = _model()
    ran = []

    def fixed(steps, reset, sync, repeat):
        for step in steps:
            reset()
            step()
            ran.append(1)
        return [0.05, 0.08]

    monkeypatch.setattr(variants, "_timed_together", fixed)
    chains = remat_torch.describe_variants(model, x, target, [{}, {"merge": 2}],
                                           loss=nn.functional.cross_entropy, repeat=1, progress=False)
    assert ran == [1, 1]
    assert len(chains[1]["stages"]) < len(chains[0]["stages"])  # merge=2 joined blocks
    for chain, want in zip(chains, [0.05, 0.08]):
        top = remat_torch.solve(chain, "store-all", "100%")
        assert top["predicted"]["makespan_seconds"] == pytest.approx(want, rel=1e-9)
        assert "timed with the others'" in chain["source"]
    assert "merge=2" in chains[1]["source"]
    assert all(p.grad is None for p in model.parameters())  # left as it was


def _squares(out, target):
    """A loss with nothing a selective-checkpointing policy could drop
    (its one saved tensor is its input): as a stage of its own it gets no
    menu."""
    return out.square().mean()


@pytest.mark.parametrize("variant, loss, timed", [
    ({"merge": 4, "join_glue": True, "menu": True}, nn.functional.cross_entropy, 1),
    ({"merge": 4, "join_glue": True, "loss_apart": True, "menu": True}, _squares, 1),
    ({"merge": 4, "join_glue": True, "loss_apart": True, "menu": True}, nn.functional.cross_entropy, None),
])
def test_the_one_stage_with_a_menu_has_its_options_timed_as_whole_steps(monkeypatch, variant, loss, timed):
    # The whole step as one stage (`join_glue`, `merge` over every block),
    # or the whole model before a loss with no menu (`loss_apart`): each
    # menu option of the one stage with a menu is a configuration of the
    # whole step, timed as one in the same rounds as the store-all steps,
    # and its extra time is its median over the chain's store-all median.
    # Where two stages carry menus (the cross-entropy keeps less under
    # `save_nothing`), the options are not whole configurations, and none
    # is timed. How it could fail: the options' steps not run with their
    # option (each would time store-all again: the runtime's records would
    # show option 0), their medians handed to the wrong entries, or the
    # chain rescaled after the extras are set (they would be scaled twice).
    # Mutation run: the extras read against the *first* chain's store-all
    # median (`medians[0]`) → off by 30 ms, fails; the `option` not put in
    # the schedule → the steps run option 0, fails; `menu_stage` taking
    # the first stage with a menu whatever the others → the last case
    # times the options, fails.
    _, x, target = _model()
    torch.manual_seed(0)
    model = _Net()
    ran = []

    def fixed(steps, reset, sync, repeat):
        for step in steps:
            reset()
            step()
            ran.append(step.schedule.ops[0].option)
        return [0.05, 0.08] + [0.08 + 0.01 * k for k in range(1, len(steps) - 1)]

    monkeypatch.setattr(variants, "_timed_together", fixed)
    chains = remat_torch.describe_variants(model, x, target, [{}, variant], loss=loss, repeat=1, progress=False)
    assert len(chains[1]["stages"]) == (2 if variant.get("loss_apart") else 1)
    menu = chains[1]["stages"][0].get("menu") or []
    assert len(menu) >= 2 and variants.menu_stage(chains[1]) == timed
    if timed is None:
        assert ran == [0, 0] and "timed as whole steps" not in chains[1]["source"]
        return
    assert ran == [0, 0] + list(range(1, len(menu) + 1))  # each option's step runs its option
    for k, entry in enumerate(menu, start=1):
        assert entry["backward_extra_seconds"] == pytest.approx(0.01 * k, abs=1e-12), entry["policy"]
    top = remat_torch.solve(chains[1], "store-all", "100%")
    assert top["predicted"]["makespan_seconds"] == pytest.approx(0.08, rel=1e-9)
    assert "timed as whole steps" in chains[1]["source"] and "timed as whole steps" not in chains[0]["source"]


def test_fastest_is_the_lowest_predicted_plan_of_the_chains_that_fit():
    # How it could fail: the comparison reversed (the slowest plan), the
    # first feasible chain returned, or a chain whose floor is above the
    # budget stopping the search (another variant may fit). Checked against
    # solving every chain by hand, on 80 random sets of 2–4 chains at a
    # budget in bytes that some chains cannot meet. Mutation run: `<` →
    # `>` in `fastest` → a slower plan is returned, fails; the `continue`
    # after a chain below its floor → `raise` → ValueError, fails.
    rng = random.Random(7)
    skipped_some = 0
    for case in range(80):
        chains = [random_chain(rng, rng.randint(3, 10)) for _ in range(rng.randint(2, 4))]
        budget = rng.randint(60, 400) << 20
        want = None
        below = 0
        for i, chain in enumerate(chains):
            try:
                plan = remat_torch.solve(chain, "rotor", budget)
            except ValueError:
                below += 1
                continue
            if plan is not None and (want is None or plan["predicted"]["makespan_seconds"] < want[1]):
                want = (i, plan["predicted"]["makespan_seconds"])
        skipped_some += 0 < below < len(chains)
        if below == len(chains):
            with pytest.raises(ValueError, match="budget: below every chain"):
                variants.fastest(chains, budget)
            continue
        got = variants.fastest(chains, budget)
        if want is None:
            assert got is None, case
            continue
        assert got is not None and got[0] == want[0], case
        assert got[1]["predicted"]["makespan_seconds"] == want[1], case
    assert skipped_some >= 10  # the cases must include chains below their floor beside ones above


def test_fastest_solves_each_chain_at_the_same_memory_by_its_step_constants():
    # Two chains of one model staged differently hold different step
    # constants outside their memory (`constant_bytes`): a budget in the
    # first chain's terms is that budget + c_0 − c_i in chain i's. Here the
    # chains have the same stages, the first holding X more constants, so
    # the second, solved at budget + X, has the faster plan. How it could
    # fail: the budget handed to every chain as is (the two tie and the
    # first is returned), the shift's sign reversed (the second gets less
    # memory: slower or infeasible), or a chain without `constant_bytes`
    # shifted. Mutation run: `shifts` all 0 → index 0 returned, fails;
    # `constants[0] - c` → `c - constants[0]` → fails.
    rng = random.Random(3)
    for case in range(20):
        chain = random_chain(rng, 8)
        top = remat_torch.solve(chain, "store-all", "100%")["predicted"]["peak_bytes"]
        extra = top // 8

        def seconds(budget):
            try:
                plan = remat_torch.solve(chain, "rotor", budget)
            except ValueError:  # below the least memory
                return None
            return None if plan is None else plan["predicted"]["makespan_seconds"]

        budget = next((b for b in range(top // 2, top, top // 40)
                       if seconds(b) is not None and seconds(b + extra) < seconds(b)), None)
        if budget is None:
            continue
        chains = [dict(chain, constant_bytes=extra), dict(chain, constant_bytes=0)]
        for given in (budget, f"{budget}B"):
            i, plan = remat_torch.fastest(chains, given)
            assert i == 1, case
            assert plan["predicted"]["makespan_seconds"] == seconds(budget + extra), case
        unsaid = [dict(chain, constant_bytes=extra), chain]  # the second does not say: no shift
        assert remat_torch.fastest(unsaid, budget)[0] == 0, case
        break
    else:
        pytest.fail("no random chain whose rotor plan is faster with an eighth more memory")


def test_the_plan_picked_runs_with_its_variants_arguments_bit_for_bit():
    # The whole way a user takes: describe two variants, pick at a budget,
    # run the plan with `run_arguments`. How it could fail: `run_arguments`
    # dropping `merge` (the runtime finds other stages than the chain's
    # and refuses the plan) or the stages' store-all wrappers leaving
    # gradients behind. Mutation run: RUN_KEYS without "merge" → the plan
    # of the merge=2 chain fails to run (its stage count differs); RUN_KEYS
    # without "join_glue" → the joined chain's plan (2 stages) is refused
    # on the 4 stages found without it; RUN_KEYS without "loss_apart" → the
    # plan of the whole model and its loss (2 stages) is refused on the
    # one stage found without it.
    _, x, target = _model()
    torch.manual_seed(0)
    model = _Net()
    loss = nn.functional.cross_entropy
    vs = [{}, {"merge": 2}, {"merge": 2, "join_glue": True}, {"merge": 4, "join_glue": True, "loss_apart": True}]
    chains = remat_torch.describe_variants(model, x, target, vs, loss=loss, repeat=1, progress=False)
    assert [len(c["stages"]) for c in chains] == [6, 4, 2, 2]
    model.zero_grad(set_to_none=True)
    loss(model(x), target).backward()
    want = [p.grad.clone() for p in model.parameters()]
    recomputed = 0
    for i, chain in enumerate(chains):
        plan = None
        for share in ("50%", "70%", "85%", "100%"):  # the lowest above the chain's floor
            try:
                plan = remat_torch.solve(chain, "rotor", share)
            except ValueError:  # below the floor
                continue
            if plan is not None:
                break
        assert plan is not None, i
        recomputed += any(op["op"] != "backward" and op["op"] != "forward_all" for op in plan["ops"])
        model.zero_grad(set_to_none=True)
        step = remat_torch.checkpointed(model, plan, loss=loss, chain=chain, **variants.run_arguments(vs[i]))
        step(x, target)
        assert all(torch.equal(p.grad, w) for p, w in zip(model.parameters(), want)), i
    assert recomputed >= 1  # a plan that only stores all would not test the stages' cuts
    top = max(remat_torch.solve(c, "store-all", "100%")["predicted"]["peak_bytes"] for c in chains)
    picked = remat_torch.fastest(chains, top)
    assert picked is not None and picked[0] in (0, 1, 2, 3)
    with pytest.raises(ValueError, match="budget: '60%' is a share"):
        remat_torch.fastest(chains, "60%")


@pytest.mark.parametrize("bad, words", [
    ([], "variants: expected a non-empty list"),
    ({"merge": 2}, "variants: expected a non-empty list"),
    ([{}, 3], "variants[1]: expected a dict"),
    ([{"merge": 2, "repeat": 3}], "variants[0].repeat: not a variant's keyword"),
])
def test_bad_variants_are_named(bad, words):
    with pytest.raises(ValueError) as e:
        variants.check_variants(bad)
    assert words in str(e.value)


def test_a_variant_keyword_given_to_all_is_refused():
    model, x, target = _model()
    with pytest.raises(ValueError, match="merge: give it in each variant"):
        remat_torch.describe_variants(model, x, target, [{}], loss=nn.functional.cross_entropy, merge=2)
