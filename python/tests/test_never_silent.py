"""What must never run silently wrong (issue 42): a plan on a model it was
not solved for, and a plan that recomputes on a Python without NumPy."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from torch import nn

import remat_torch
from remat_torch import ScheduleError

from helpers import REPO, chain_for, mlp, solve


class Net(nn.Module):
    def __init__(self, width: int, depth: int = 4) -> None:
        super().__init__()
        self.inp = nn.Linear(16, width)
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(width, width), nn.GELU()) for _ in range(depth))
        self.out = nn.Linear(width, 10)

    def forward(self, x):
        h = self.inp(x)
        for b in self.blocks:
            h = b(h)
        return self.out(h)


def _loss(out, target):
    return nn.functional.cross_entropy(out, target)


def _batch():
    gen = torch.Generator().manual_seed(3)
    # Activations well above the weights, so that a plan at M_low
    # recomputes (with the gradients counted, a batch of 32 peaks at the
    # last backward, where only the gradients are left to hold).
    return torch.randn(256, 16, generator=gen), torch.randint(0, 10, (256,), generator=gen)


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    """A rotor plan at M_low for Net(64), its chain and schedule files."""
    root = tmp_path_factory.mktemp("never-silent")
    torch.manual_seed(0)
    x, t = _batch()
    chain = remat_torch.describe_chain(Net(64), x, t, loss=_loss, repeat=1)
    (root / "chain.json").write_text(json.dumps(chain))
    ref = solve(root / "chain.json", root / "s.json", "-a", "rotor", "-b", "100%")
    report = solve(root / "chain.json", root / "s.json", "-a", "rotor", "-b", str(ref["m_low_bytes"]))
    assert report["feasible"] and report["recomputations"] > 0, report
    return root, chain


def test_the_fingerprint_reaches_the_schedule(plan):
    """`remat solve` copies the chain's model_fingerprint into the schedule
    (else a runtime given only the schedule could not check the model)."""
    root, chain = plan
    assert chain["model_fingerprint"].startswith("sha256:")
    doc = json.loads((root / "s.json").read_text())
    assert doc["model_fingerprint"] == chain["model_fingerprint"]


@pytest.mark.parametrize("given", ["schedule", "chain"])
def test_a_plan_for_another_width_is_refused_before_anything_runs(plan, given):
    """Fails on a runtime that checks only the stage count and the batch:
    Net(128) has Net(64)'s stages and batch, and its plan would run with a
    peak far above the prediction. Mutation tried: `_check_model` not
    called in `program_for` → the step runs and returns a loss."""
    root, _ = plan
    x, t = _batch()
    wide = Net(128)
    kwargs = {"chain": root / "chain.json"} if given == "chain" else {}
    step = remat_torch.checkpointed(wide, root / "s.json", loss=_loss, **kwargs)
    with pytest.raises(ScheduleError) as e:
        step(x, t)
    msg = str(e.value)
    assert "model_fingerprint" in msg and "another model" in msg and "solve again" in msg, msg
    assert f"the {given} was made for" in msg, msg
    assert all(p.grad is None for p in wide.parameters()), "a refused plan ran something"


def test_a_plan_runs_on_a_copy_of_its_model(plan):
    """The same architecture with other weights is the same model: the
    fingerprint holds no values (fails if it hashed the weights)."""
    root, _ = plan
    torch.manual_seed(123)
    x, t = _batch()
    net = Net(64)
    loss = remat_torch.checkpointed(net, root / "s.json", loss=_loss)(x, t)
    assert torch.isfinite(loss)
    assert all(p.grad is not None for p in net.parameters())


NO_NUMPY = r"""
import sys
sys.modules["numpy"] = None  # `import numpy` raises ImportError, as where it is not installed
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import torch
import remat_torch
from helpers import mlp

net, x, target = mlp()
torch.manual_seed(5)
a = x
for stage in list(net)[:-1]:
    a = stage(a)
list(net)[-1](a, target).backward()
plain = [p.grad.clone() for p in net.parameters()]
net.zero_grad(set_to_none=True)
torch.manual_seed(5)
step = remat_torch.checkpointed(net, sys.argv[3])
step(x, target)
assert max(step.last_forward_counts) > 1, "nothing recomputed"
assert all(torch.equal(p.grad, g) for p, g in zip(net.parameters(), plain)), "gradients differ"
try:
    torch.zeros(1).numpy()
except RuntimeError as e:
    print("numpy-free:", e)
"""


def test_a_recomputing_plan_runs_without_numpy(tmp_path):
    """torch does not depend on NumPy; a plan that recomputes stages with
    dropout must keep and replay their RNG state without it, bitwise
    against plain autograd. Fails on `bytes(torch.get_rng_state().numpy())`
    (`RuntimeError: Numpy is not available`), what the runtime did until
    issue 42."""
    net, x, target = mlp()
    chain = tmp_path / "mlp.chain.json"
    chain.write_text(json.dumps(chain_for("mlp", net, x, target)))
    ref = solve(chain, tmp_path / "s.json", "-a", "rotor", "-b", "100%")
    report = solve(chain, tmp_path / "s.json", "-a", "rotor", "-b", str(ref["m_low_bytes"]))
    assert report["recomputations"] > 0, report
    p = subprocess.run(
        [sys.executable, "-c", NO_NUMPY, str(REPO / "python"), str(REPO / "python" / "tests"),
         str(tmp_path / "s.json")],
        capture_output=True, text=True, timeout=300,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert "numpy-free: Numpy is not available" in p.stdout, p.stdout


# --- what capture freezes (remat_torch.frozen) ---------------------------------


class Phased(Net):
    """Net(64) whose forward branches on a Python attribute."""

    def __init__(self) -> None:
        super().__init__(64)
        self.phase = 0

    def forward(self, x):
        h = super().forward(x)
        return -h if self.phase % 2 else h


class Counting(Net):
    """Net(64) whose forward advances a Python counter."""

    def __init__(self) -> None:
        super().__init__(64)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return super().forward(x)


def test_a_forward_hook_is_refused_naming_its_module(plan):
    """A forward hook would run once, at capture, on fake tensors. Fails if
    hooks are not looked for (the step runs; the hook's list holds one
    fake tensor). Mutation tried: `refuse_hooks` returning at once → no
    error (and this test and the global hook's fail)."""
    root, _ = plan
    x, t = _batch()
    net = Net(64)
    seen = []

    def record(module, args, output):
        seen.append(output)

    net.blocks[1].register_forward_hook(record)
    with pytest.raises(remat_torch.FrozenStateError) as e:
        remat_torch.checkpointed(net, root / "s.json", loss=_loss)(x, t)
    msg = str(e.value)
    assert msg.startswith("blocks.1: a forward hook (test_a_forward_hook_is_refused_naming_its_module.<locals>.record)"), msg
    assert "never while training" in msg, msg
    assert all(p.grad is None for p in net.parameters())


def test_a_hook_registered_after_capture_is_refused_at_the_next_step(plan):
    """The step checks the modules' hooks from lists made at capture
    (`PythonState.hook_dicts`), not by walking the modules. Fails if a hook
    registered after the first step goes unseen (it would never run).
    Mutation tried: `check` without its hook test → the second step runs."""
    root, _ = plan
    x, t = _batch()
    net = Net(64)
    step = remat_torch.checkpointed(net, root / "s.json", loss=_loss)
    step(x, t)
    handle = net.blocks[2].register_forward_pre_hook(lambda m, a: None)
    with pytest.raises(remat_torch.FrozenStateError, match="^blocks.2: a forward pre-hook"):
        step(x, t)
    handle.remove()
    step(x, t)  # as it was captured: runs


def test_a_global_module_hook_is_refused(plan):
    root, _ = plan
    x, t = _batch()
    handle = nn.modules.module.register_module_forward_hook(lambda m, a, o: None)
    try:
        with pytest.raises(remat_torch.FrozenStateError, match="global module hook"):
            remat_torch.checkpointed(Net(64), root / "s.json", loss=_loss)(x, t)
    finally:
        handle.remove()


def test_a_branch_on_python_state_changed_after_capture_is_refused(plan):
    """The loop flips `phase`; the captured stages keep the branch of step
    1. Fails (the second step runs the first step's branch: gradients of
    the un-negated output, silently) if the modules' attributes are not
    compared at each step. Mutation tried: `PythonState.check` seeing no
    change → the second step runs."""
    root, _ = plan
    x, t = _batch()
    net = Phased()
    step = remat_torch.checkpointed(net, root / "s.json", loss=_loss)
    step(x, t)
    net.phase += 1
    with pytest.raises(remat_torch.FrozenStateError) as e:
        step(x, t)
    assert str(e.value).startswith("phase: 0 → 1 since the stages were captured"), str(e.value)
    net.phase -= 1
    step(x, t)  # back as it was captured: runs


def test_a_forward_that_changes_python_state_is_refused_at_capture(plan):
    root, _ = plan
    x, t = _batch()
    with pytest.raises(remat_torch.FrozenStateError) as e:
        remat_torch.checkpointed(Counting(), root / "s.json", loss=_loss)(x, t)
    assert str(e.value).startswith("calls: 0 → 1 while the model's forward was captured"), str(e.value)


# --- autocast: the backward where the usual recipe runs it -------------------------


def _tiny_gpt2():
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, n_positions=64, vocab_size=128,
                                     attn_pdrop=0.2, resid_pdrop=0.1, embd_pdrop=0.1)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config)
    model.config.use_cache = False
    return model


def _lm_loss(out, labels):
    logits = out.logits[:, :-1]
    return nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), labels[:, 1:].reshape(-1))


def test_bf16_autocast_with_attention_dropout_trains_as_the_usual_recipe(tmp_path):
    """Twenty AdamW steps of a GPT-2 with attention dropout under CPU bf16
    autocast, the usual recipe (forward under autocast, `loss.backward()`
    outside) against `checkpointed` called under autocast with a plan that
    recomputes: every parameter bitwise. Fails when the wrapper runs the
    backwards inside the caller's autocast (the issue measured up to 8e-3
    apart from step 2). Mutation tried: `outside_autocast` made a no-op."""
    import copy

    model = _tiny_gpt2()
    twin = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(1)
    batches = [torch.randint(0, 128, (2, 32), generator=gen) for _ in range(20)]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        chain = remat_torch.describe_chain(twin, {"input_ids": batches[0]}, batches[0], loss=_lm_loss, repeat=1)
    (tmp_path / "chain.json").write_text(json.dumps(chain))
    ref = solve(tmp_path / "chain.json", tmp_path / "s.json", "-a", "rotor", "-b", "100%")
    report = solve(tmp_path / "chain.json", tmp_path / "s.json", "-a", "rotor", "-b", str(ref["m_low_bytes"]))
    assert report["recomputations"] > 0, report
    step = remat_torch.checkpointed(twin, tmp_path / "s.json", loss=_lm_loss)
    opt_plain = torch.optim.AdamW(model.parameters(), lr=1e-3)
    opt = torch.optim.AdamW(twin.parameters(), lr=1e-3)
    torch.manual_seed(11)
    state = torch.get_rng_state()
    for ids in batches:
        opt_plain.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = _lm_loss(model(input_ids=ids), ids)
        loss.backward()
        opt_plain.step()
    torch.set_rng_state(state)
    for ids in batches:
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            step({"input_ids": ids}, ids)
        opt.step()
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        assert torch.equal(p, q), (name, (p - q).abs().max().item())


def test_describing_says_how_far_it_is(capsys):
    """describe_chain reports its work as it goes (issue 42, item 5): the
    stages checked, then sizes, times (stage k of n, `repeat` sweeps) and
    each menu option, then the whole steps of the calibration, in that
    order, counting up to their totals; with
    `progress=True` one line on stderr ends with the time it took; with
    False, nothing. Fails if a phase stops reporting (a sweep without its
    call: its counts never reach total − 1; mutation run: the timing loop's
    call removed → "times" missing from the phases) or if the silent mode prints."""
    model = Net(24, depth=3)
    x, target = _batch()
    seen = []
    remat_torch.describe_chain(model, x, target, loss=_loss, repeat=2, menu=["save_nothing"],
                               progress=lambda phase, done, total: seen.append((phase, done, total)))
    phases = list(dict.fromkeys(p for p, _, _ in seen))
    assert phases == ["checking the stages against the model's own step", "warming up", "sizes",
                      "menu option save_nothing", "times", "whole steps"], phases
    n = 5  # inp, three blocks, out+loss
    # "whole steps": the calibration's warm-up round and `repeat` rounds.
    for phase, total in (("sizes", n), ("times", 2 * n), ("warming up", n), ("whole steps", 3)):
        counts = [d for p, d, t in seen if p == phase and t == total]
        assert counts == list(range(total)), (phase, counts)
    remat_torch.describe_chain(model, x, target, loss=_loss, repeat=1, progress=True)
    err = capsys.readouterr().err
    assert "describe_chain: sizes: 4 of 5 done" in err and err.rstrip().split("\r")[-1].startswith(
        "describe_chain: done in "), err[-200:]
    remat_torch.describe_chain(model, x, target, loss=_loss, repeat=1, progress=False)
    assert capsys.readouterr().err == ""


class _Block(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x):
        return nn.functional.relu(self.bn(self.conv(x)))


class _UNet(nn.Module):
    """Long skips: each down block's output is added into the up block of
    the same depth, so no cut inside the U is crossed by one tensor."""

    def __init__(self, depth: int, c: int = 4) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, c, 1)
        self.down = nn.ModuleList(_Block(c) for _ in range(depth))
        self.mid = _Block(c)
        self.up = nn.ModuleList(_Block(c) for _ in range(depth))
        self.head = nn.Conv2d(c, 2, 1)

    def forward(self, x):
        x = self.stem(x)
        skips = []
        for d in self.down:
            x = d(x)
            skips.append(x)
        x = self.mid(x)
        for u in self.up:
            x = u(x + skips.pop())
        return self.head(x).mean((2, 3))


def _unet_batch():
    gen = torch.Generator().manual_seed(5)
    return torch.randn(2, 3, 16, 16, generator=gen), torch.randint(0, 2, (2,), generator=gen)


def test_a_coarse_stage_is_named_by_its_blocks_and_explained():
    """A U-Net's skips leave one stage of several blocks (issue 42: a U-Net
    gave one stage of six blocks, with no reason given): it is named by its
    blocks and the module between them (`mid`), not by its twelve convs and
    norms, and describe_chain says why, naming the tensors that cross, the
    block each comes from and where it is read last. The chain's `module`
    keeps every module it runs (what the export wraps). Fails if the name
    lists the modules inside (mutation run: `_units` returning [] → the
    name is `down.1.conv+down.1.bn+…+up.1.bn (10 modules)`), or if the
    warning is gone."""
    torch.manual_seed(0)
    x, y = _unet_batch()
    model = _UNet(3)
    with pytest.warns(UserWarning) as caught:
        chain = remat_torch.describe_chain(model, x, y, loss=nn.functional.cross_entropy, repeat=1)
    names = [s["name"] for s in chain["stages"]]
    assert names == ["stem", "down.0", "down.1+down.2+mid+up.0+up.1", "up.2", "head+loss"], names
    assert chain["stages"][2]["module"].startswith("down.1.conv+down.1.bn+down.2.conv"), chain["stages"][2]
    said = [str(w.message) for w in caught if "holds" in str(w.message)]
    assert len(said) == 1, said
    assert said[0].startswith("stage 3 (down.1+down.2+mid+up.0+up.1) holds 4 blocks, down.1 … up.1: "
                              "between down.1 and down.2, 2 tensors that need a gradient cross it "
                              "(`relu` from down.0, last read in the model's own forward; "
                              "`relu_1` from down.1, last read in the model's own forward)"), said[0]


def test_a_long_coarse_name_is_shortened():
    """Nine parts in one stage: the first two, the last, and how many
    (a T5 decoder as one stage was named in 1,304 characters)."""
    x, y = _unet_batch()
    staged = remat_torch.find_stages(_UNet(5), x, y, nn.functional.cross_entropy)
    assert staged.names[2] == "down.1+down.2+…+up.3 (9 parts)", staged.names
    assert staged.stages[2].path.count("+") == 17, staged.stages[2].path


def test_fine_granularity_names_every_stage_once():
    """`granularity="fine"` cuts a GPT-2 block in two: each piece is named
    with its rank (`transformer.h.0[1]`, `[2]`), so every stage's name is
    its own (issue 42: the names repeated). Fails without the ranks
    (mutation run: the renaming loop removed → `transformer.h.0` twice)."""
    from helpers import lm_loss, tiny_gpt2, token_ids

    ids = token_ids(1)
    staged = remat_torch.find_stages(tiny_gpt2(0.0), {"input_ids": ids, "use_cache": False}, ids, lm_loss,
                                     granularity="fine")
    assert len(set(staged.names)) == len(staged.names), staged.names
    assert "transformer.h.0[1]" in staged.names and "transformer.h.0[2]" in staged.names, staged.names
    # The module paths, what exports wrap, are not renamed.
    assert [s.path for s in staged.stages].count("transformer.h.0") == 2


def test_a_torch_older_than_the_tested_range_is_said():
    """The supported range (2.11 to 2.13) is checked at import: an older
    torch gets a warning. How it could fail: the minor version compared as
    a string ("2.9" > "2.11") or the local part ("+cu128") breaking the
    parse. Mutation run: comparing `version < "2.11"` as strings → 2.9.1
    passes as new enough, fails."""
    assert remat_torch.older_than_supported("2.9.1+cu128")
    assert remat_torch.older_than_supported("2.10.0")
    assert not remat_torch.older_than_supported("2.11.0+cu130")
    assert not remat_torch.older_than_supported("2.13.0a0+gitabc")
    assert not remat_torch.older_than_supported("3.0.0")
    assert not remat_torch.older_than_supported(torch.__version__)
