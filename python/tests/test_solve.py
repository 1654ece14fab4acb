"""`remat_torch.solve`: remat-core's planners in this process (the
`_solver` extension maturin builds from crates/remat-py, issue 42 item 3),
held to the `remat` binary's answer, and its refusals of bad input."""

from __future__ import annotations

import json
import math

import pytest
import torch

import remat_torch

from helpers import remat

# Built-in chains of three kinds: analytic, measured by describe_chain (with
# schedule inputs), and one with menus; plus the transfer link pofo needs.
CASES = [
    ("gpt2-cpu-torch", "rotor", "50%", None),
    ("gpt2-cpu-torch", "revolve", "70%", None),
    ("gpt2-cpu-torch", "sequential", "80%", None),
    ("gpt2-cpu-torch", "dtr", "60%", None),
    ("vgg19", "pofo", "2.2GiB", "12GB/s"),
    ("vgg19", "rotor", "2.5GiB", None),
    ("gpt2-sac", "rotor", "3.5GiB", None),
    ("teaching", "hong", "100%", None),
]


@pytest.fixture(scope="module")
def chains(tmp_path_factory):
    folder = tmp_path_factory.mktemp("chains")
    out = {}
    for name in {c[0] for c in CASES}:
        path = folder / f"{name}.json"
        remat("examples", "--write", name, "-o", str(path))
        out[name] = path
    return out


@pytest.mark.parametrize("name,algorithm,budget,bandwidth", CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASES])
def test_solve_writes_what_remat_solve_writes(chains, tmp_path, name, algorithm, budget, bandwidth):
    """In-process and through the binary, the same schedule file: the same
    ops, budget in bytes, digest and the simulator's predicted peak and
    time, to the bit. Fails if the extension parsed a budget otherwise than
    the command line (mutation run: a percentage divided by 10 instead of
    100 → every "%" case differs in budget_bytes and ops), planned with
    other options, or predicted with another judge."""
    path = chains[name]
    out = tmp_path / "plan.json"
    args = ["solve", str(path), "-a", algorithm, "-b", budget, "-o", str(out)]
    if bandwidth:
        args += ["--bandwidth", bandwidth]
    remat(*args)
    want = json.loads(out.read_text())
    chain = json.loads(path.read_text())
    got = remat_torch.solve(chain, algorithm, budget=budget, bandwidth=bandwidth)
    assert got == want
    # A path is read as the file it names.
    assert remat_torch.solve(path, algorithm, budget=budget, bandwidth=bandwidth) == want


def test_a_budget_in_bytes_is_a_number_or_a_size(chains):
    """An int is bytes, as "3e9" is; both are the same plan."""
    path = chains["vgg19"]
    assert remat_torch.solve(path, "rotor", budget=3_000_000_000) == remat_torch.solve(path, "rotor", budget="3e9")


def test_no_schedule_of_the_algorithm_fits_is_none(chains):
    """Above the floor, below what the algorithm can do: None, as `remat
    solve` says `feasible: false` (Hong's set never runs below the
    simulated peak of its checkpoints)."""
    path = chains["teaching"]
    p = remat("solve", str(path), "-a", "hong", "-b", "40%", "--json")
    assert json.loads(p.stdout)["feasible"] is False
    assert remat_torch.solve(path, "hong", budget="40%") is None


@pytest.mark.parametrize("kwargs,error,message", [
    ({"algorithm": "rotr"}, ValueError, r"^algorithm: unknown algorithm `rotr`; choose one of"),
    ({"budget": "50 furlongs"}, ValueError, r"^budget: unknown size unit `furlongs`"),
    ({"budget": "0%"}, ValueError, r"^budget: \"0%\" is out of range"),
    ({"budget": "abc%"}, ValueError, r"^budget: \"abc%\" is not a percentage"),
    ({"budget": math.nan}, ValueError, r"^budget: NaN is not a size"),
    ({"budget": "1B"}, ValueError, r"^budget: 1 B is below .*, the least memory any schedule of this chain needs"),
    ({"budget": None}, TypeError, r"^budget: expected a string"),
    ({"bandwidth": "fast"}, ValueError, r"^bandwidth: `fast` is not a number"),
    ({"algorithm": 3}, TypeError, r"^algorithm: expected a name"),
], ids=["algorithm", "unit", "zero-share", "not-a-share", "nan", "below-floor", "none", "bandwidth", "algorithm-type"])
def test_bad_arguments_are_refused_naming_them(chains, kwargs, error, message):
    """Each bad argument: the exception names it, before anything is
    planned; never a panic (a PanicException would not match)."""
    args = {"algorithm": "rotor", "budget": "50%", **kwargs}
    with pytest.raises(error, match=message):
        remat_torch.solve(chains["vgg19"], **args)


def test_a_bad_chain_is_refused_naming_its_field(tmp_path):
    """A chain with a negative time, one that is not JSON, a missing file:
    ValueError naming `chain` and the field."""
    bad = {"format": "remat-chain/1", "name": "x", "stages": [
        {"name": "a", "forward_seconds": -1.0, "backward_seconds": 1.0, "output_bytes": 8, "saved_bytes": 8}],
        "input_bytes": 8}
    with pytest.raises(ValueError, match=r"^chain: stages\[0\]\.forward_seconds"):
        remat_torch.solve(bad, "rotor", budget="100%")
    text = tmp_path / "broken.json"
    text.write_text('{"format": "remat-chain/1", "stages": [')
    with pytest.raises(ValueError, match=r"^chain: "):
        remat_torch.solve(text, "rotor", budget="100%")
    with pytest.raises(ValueError, match=r"^chain: cannot read"):
        remat_torch.solve(tmp_path / "absent.json", "rotor", budget="100%")
    with pytest.raises(TypeError, match=r"^chain: expected a chain dict"):
        remat_torch.solve(42, "rotor", budget="100%")


def test_algorithms_are_the_command_lines():
    """The names `solve` takes are those `remat algorithms` lists."""
    listed = remat("algorithms").stdout
    names = remat_torch.algorithms()
    assert "rotor" in names and "pofo" in names
    assert all(n in listed for n in names)


def test_a_solved_plan_trains_as_the_binary_s_plan(tmp_path):
    """A plan from `solve` runs in `checkpointed` directly (a dict), with the
    loss and gradients of plain training bit for bit."""
    from helpers import lm_loss, tiny_gpt2, token_ids

    model = tiny_gpt2(0.0)
    ids = token_ids(1)
    batch = {"input_ids": ids, "use_cache": False}
    chain = remat_torch.describe_chain(model, batch, ids, loss=lm_loss, repeat=1)
    # 70 %: with the parameter gradients in the chain, 60 % of M_high is
    # below this tiny GPT-2's floor.
    plan = remat_torch.solve(chain, "rotor", budget="70%")
    assert any(op["op"] == "forward_checkpoint" for op in plan["ops"]), "70 % should recompute something"
    step = remat_torch.checkpointed(model, plan, loss=lm_loss)
    got = step(batch, ids)
    grads = [p.grad.clone() for p in model.parameters()]
    for p in model.parameters():
        p.grad = None
    want = lm_loss(model(**batch), ids)
    want.backward()
    assert torch.equal(got, want.detach())
    assert all(torch.equal(a, p.grad) for a, p in zip(grads, model.parameters()))
