"""Models nobody here wrote — transformers, torchvision, timm, built from
configs with random weights — described with no staging code, planned,
and trained as planned.

What is held (issue "Your network, measured"):
* the stages are found and match the model's own step bit for bit;
* M_high (store-all's simulated peak) is within ±3 % of a plain step's
  measured activation peak (`plain_step_peak`);
* rotor's, revolve's and sequential's schedules at α = 0.1, 0.5, 0.9 run
  with a measured peak at most 3 % above and 6 % below the prediction, with
  the loss and every gradient bitwise those of a plain step.
"""

from __future__ import annotations

import json
from typing import Callable, Dict, Tuple

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import remat_torch
from remat_torch import Meter, StagingError, checkpointed, describe_chain, plain_step_peak
from remat_torch.staging import make_program

from helpers import remat

transformers = pytest.importorskip("transformers")
torchvision = pytest.importorskip("torchvision")
timm = pytest.importorskip("timm")


def lm_loss(out, labels):
    """Next-token cross-entropy, as a causal-LM training loop writes it."""
    logits = out.logits
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1))


def ce(out, target):
    return F.cross_entropy(out, target)


def gpt2():
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=3, n_embd=64, n_head=4, vocab_size=1000, n_positions=64,
                                  bos_token_id=0, eos_token_id=0)
    model = transformers.GPT2LMHeadModel(cfg).train()
    ids = torch.randint(0, 1000, (2, 32))
    # use_cache=False, as transformers itself sets when training with
    # checkpointing: the cache the loss never reads would otherwise stay
    # alive in the plain step (the found stages never build it).
    return model, {"input_ids": ids, "use_cache": False}, ids, lm_loss


def llama(tokens: int = 32):
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(num_hidden_layers=2, hidden_size=64, intermediate_size=128,
                                   num_attention_heads=4, num_key_value_heads=2, vocab_size=1000,
                                   bos_token_id=0, eos_token_id=0, pad_token_id=0)
    model = transformers.LlamaForCausalLM(cfg).train()
    ids = torch.randint(0, 1000, (2, tokens))
    return model, {"input_ids": ids, "attention_mask": torch.ones_like(ids), "use_cache": False}, ids, lm_loss


def resnet():
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10).train()
    return model, torch.randn(2, 3, 64, 64), torch.randint(0, 10, (2,)), ce


def vit():
    torch.manual_seed(0)
    model = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32, depth=4,
                              num_classes=10).train()
    return model, torch.randn(2, 3, 32, 32), torch.randint(0, 10, (2,)), ce


MODELS: Dict[str, Callable[[], Tuple[nn.Module, object, torch.Tensor, Callable]]] = {
    "gpt2": gpt2, "resnet": resnet, "vit": vit,
}


def _state(model):
    rng = torch.get_rng_state()
    buffers = [(b, b.detach().clone()) for b in model.buffers()]

    def reset():
        torch.set_rng_state(rng)
        with torch.no_grad():
            for b, old in buffers:
                b.copy_(old)
        for p in model.parameters():
            p.grad = None

    return reset


def _grads(model):
    return [None if p.grad is None else p.grad.clone() for p in model.parameters()]


def _same(a, b):
    return all((x is None and y is None) or (x is not None and y is not None and torch.equal(x, y))
               for x, y in zip(a, b))


@pytest.mark.parametrize("which, names", [
    ("gpt2", ["transformer.wte+transformer.wpe+transformer.drop", "transformer.h.0",
              "transformer.h.1", "transformer.h.2", "transformer.ln_f+lm_head+loss"]),
    ("llama", ["model.embed_tokens", "model.layers.0", "model.layers.1", "model.norm+lm_head+loss"]),
    ("resnet", ["conv1+bn1+relu+maxpool", "layer1.0", "layer1.1", "layer2.0", "layer2.1", "layer3.0",
                "layer3.1", "layer4.0", "layer4.1", "avgpool+fc+loss"]),
    ("vit", ["patch_embed.proj+pos_drop", "blocks.0", "blocks.1", "blocks.2", "blocks.3",
             "norm+head_drop+head+loss"]),
])
def test_stages_are_found_and_named_by_their_modules(which, names):
    """One stage per block, the glue named by its modules. ResNet's stem
    ends after maxpool, not before `relu` (in place: a cut there would write
    into the kept checkpoint). Llama's rotary tables and mask are step
    constants, so it cuts at its layers. Fails if the block rule, the
    in-place rule or the constants rule changes (mutation tried: constants
    counted as crossing tensors — Llama has no cut and the describer
    raises)."""
    factory = llama if which == "llama" else MODELS[which]
    model, batch, target, loss = factory()
    staged = remat_torch.find_stages(model, batch, target, loss)
    assert staged.names == names


@pytest.mark.parametrize("factory", [
    lambda: (timm.create_model("convnext_atto", pretrained=False, num_classes=10).train(),
             torch.randn(2, 3, 32, 32), torch.randint(0, 10, (2,)), ce),
    lambda: (torchvision.models.mobilenet_v2(num_classes=10).train(),
             torch.randn(2, 3, 32, 32), torch.randint(0, 10, (2,)), ce),
    llama,
], ids=["timm-convnext", "mobilenet", "llama"])
def test_other_families_are_checked_bit_for_bit(factory):
    """describe_chain's check runs the model's own step and the stages on the
    same batch and compares the loss and every gradient bitwise; it raises
    otherwise. ConvNeXt's block outputs are channels-last: taking δ^{ℓ-1}
    from a leaf's `.grad` (AccumulateGrad re-lays it out) made its gradients
    differ in the last bits (mutation tried: `_Entry` replaced by
    `detach().requires_grad_()` — StagingError on stage 1)."""
    model, batch, target, loss = factory()
    chain = describe_chain(model, batch, target, loss=loss, repeat=1)
    assert len(chain["stages"]) > 3
    assert all(s.get("module") or s["name"] == "loss" for s in chain["stages"])


def test_a_stage_that_differs_from_the_model_is_refused():
    """Fails if the check compares nothing (mutation tried: `_verify`
    skipped — no error)."""
    model, batch, target, loss = resnet()
    staged = remat_torch.find_stages(model, batch, target, loss)
    from remat_torch.chain import _verify
    from remat_torch.measure import TrainingState
    from remat_torch.staging import StagedProgram

    program = StagedProgram(staged)
    stage = staged.stages[3].module
    original = stage.forward

    def off_by_a_bit(*args):
        return original(*args) * (1 + 1e-6)

    stage.forward = off_by_a_bit
    state = TrainingState(list(model.parameters()), list(model.buffers()), torch.device("cpu"))
    with pytest.raises(StagingError, match="loss"):
        _verify(program, model, loss, batch, target, state, torch.device("cpu"))
    state.restore()


@pytest.mark.parametrize("which, merge, loss_apart, names", [
    ("gpt2", 1, False, ["transformer.wte+transformer.wpe+transformer.drop+transformer.h.0", "transformer.h.1",
                        "transformer.h.2+transformer.ln_f+lm_head+loss"]),
    ("vit", 2, False, ["patch_embed.proj+pos_drop+blocks.0+blocks.1", "blocks.2+blocks.3+norm+head_drop+head+loss"]),
    ("vit", 4, False, ["patch_embed.proj+pos_drop+blocks+norm+head_drop+head+loss"]),
    ("vit", 4, True, ["patch_embed.proj+pos_drop+blocks+norm+head_drop+head", "loss"]),
    ("gpt2", 3, True, ["transformer.wte+transformer.wpe+transformer.drop+transformer+transformer.ln_f+lm_head",
                       "loss"]),
])
def test_glue_joined_to_its_blocks_runs_bit_for_bit(which, merge, loss_apart, names):
    """`join_glue=True`: the stem with the first block stage, the head and
    the loss with the last — with `merge` covering every block, the whole
    step as one stage, what whole-model torch.compile compiles; with
    `loss_apart=True` the whole model, then the user's loss (the shifted
    cross-entropy of GPT-2's logits) as a stage of its own, as
    `torch.compile(model)` runs them. The chain
    is checked against the model's own step (describe_chain's check) and
    rotor's plan at the least memory it can run in is run by `checkpointed`
    with the same arguments, bitwise against a plain step. Fails if the
    glue is dropped or joined elsewhere (mutations run: the stem's nodes
    not carried into the first block stage → the first stage's graph reads
    a value no stage computes, KeyError `dropout` on all three; `join_glue`
    not passed on by `checkpointed` → the runtime finds more stages than the
    plan has, ScheduleError on all three; `loss_apart` not passed on by
    `checkpointed` → ScheduleError on the last two; the loss's nodes left in
    the model's stage as well → the loss stage reads the logits no stage
    hands it, KeyError `linear` on the last two)."""
    model, batch, target, loss = MODELS[which]()
    chain = describe_chain(model, batch, target, loss=loss, repeat=1, merge=merge, join_glue=True,
                           loss_apart=loss_apart, progress=False)
    assert [s["name"] for s in chain["stages"]] == names
    plan = None
    for share in ("0%", "30%", "60%", "100%"):  # the least memory above the chain's floor
        try:
            plan = remat_torch.solve(chain, "rotor", share)
        except ValueError:
            continue
        if plan is not None:
            break
    assert plan is not None
    reset = _state(model)
    loss(model(**batch) if isinstance(batch, dict) else model(batch), target).backward()
    want = _grads(model)
    reset()
    step = checkpointed(model, plan, loss=loss, chain=chain, merge=merge, join_glue=True, loss_apart=loss_apart)
    step(batch, target)
    assert _same(_grads(model), want)
    with pytest.raises(StagingError, match="join_glue: expected True or False"):
        remat_torch.find_stages(model, batch, target, loss, join_glue="yes")
    with pytest.raises(StagingError, match="loss_apart: expected True or False"):
        remat_torch.find_stages(model, batch, target, loss, loss_apart=1)


def test_a_loss_apart_must_read_one_tensor_the_model_made():
    """`loss_apart=True` needs a loss computed outside the model from one
    tensor that needs a gradient: a loss the model returns itself, or one
    reading two of the model's outputs, is refused with the reason, and
    the same model still stages without it."""

    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))
            self.a, self.b = nn.Linear(8, 2), nn.Linear(8, 2)

        def forward(self, x):
            for blk in self.blocks:
                x = blk(x).relu()
            return self.a(x), self.b(x)

    torch.manual_seed(0)
    model, x, t = TwoHeads(), torch.randn(4, 8), torch.randint(0, 2, (4,))
    two = lambda out, t: F.cross_entropy(out[0], t) + F.cross_entropy(out[1], t)  # noqa: E731
    with pytest.raises(StagingError, match=r"loss_apart: 2 tensors that need a gradient cross from the model"):
        remat_torch.find_stages(model, x, t, two, loss_apart=True)
    assert len(remat_torch.find_stages(model, x, t, two).stages) >= 3
    inside = lambda out, t: out[0].sum()  # noqa: E731  (a sum is still an op outside the model)
    assert remat_torch.find_stages(model, x, t, inside, loss_apart=True).stages[-1].name == "loss"

    class Returns(TwoHeads):
        def forward(self, x):
            a, b = super().forward(x)
            return F.cross_entropy(a, torch.zeros(4, dtype=torch.long)) + b.sum()

    returned = lambda out, t: out  # noqa: E731
    with pytest.raises(StagingError, match="loss_apart: the loss computes nothing outside the model"):
        remat_torch.find_stages(Returns(), x, t, returned, loss_apart=True)


def test_no_cut_is_a_clear_error():
    """Two tensors that need a gradient cross every block boundary: no chain."""

    class TwoStreams(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))
            self.side = nn.Parameter(torch.randn(8))

        def forward(self, x):
            s = x * self.side
            for b in self.blocks:
                x = b(x) + s
                s = s * 2
            return x

    with pytest.raises(StagingError, match="no stage boundary"):
        remat_torch.find_stages(TwoStreams(), torch.randn(2, 8), torch.randn(2, 8),
                                lambda out, t: F.mse_loss(out, t))


def test_a_model_that_is_not_a_list_needs_a_loss():
    model, batch, target, _ = resnet()
    with pytest.raises(StagingError, match="loss: required"):
        describe_chain(model, batch, target)


def _solve(tmp_path, chain_path, algorithm, budget):
    out = tmp_path / f"{algorithm}-{budget}.json"
    p = remat("solve", str(chain_path), "-a", algorithm, "-b", str(budget), "--json", "-o", str(out),
              check=False)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout), out


@pytest.mark.parametrize("set_to_none", [True, False])
@pytest.mark.parametrize("which", ["gpt2", "resnet", "vit"])
def test_plans_hold_in_the_real_step(which, set_to_none, tmp_path):
    """The chain's M_high against a plain step's measured peak (±3 %), then
    every rotor, revolve and sequential schedule at α = 0.1, 0.5, 0.9 run
    through `checkpointed(model, schedule, loss=fn)`: measured peak within
    +3 % / −6 % of the prediction (and, as these runs are exact to a few
    bytes, within 0.5 %), loss and gradients bitwise. Mutations tried, each
    failing this test: the pack hook keeping what it collected (GPT-2 rotor
    1 052 936 B measured vs 846 140 predicted); one o_f for F_all and the
    no-grad forwards, the larger (GPT-2 at α = 0.1: 846 144 B measured vs
    938 260 predicted, −9.8 %); RNG states kept as tensors (ViT +0.56 %,
    caught by the 0.5 % bound only: a state is 5 KiB). Not caught at these
    sizes: the runtime keeping its own reference to δ^ℓ through B^ℓ (16 KiB
    here, and no B^ℓ whose δ^ℓ is live at its peak sets the step's peak).

    Both ways a loop clears the parameter gradients (issue 42): with
    `set_to_none=True` the chain counts the gradients each backward creates
    (g^ℓ) and the plain step's peak counts them as the allocator does; with
    False both leave them outside, the step starting with zeroed `.grad`s
    as such a loop's does. Mutation runs: the Meter booking outside a
    `.grad` that existed before the step (it was never counted) → the
    ResNet's and the ViT's cases fail with set_to_none=False (the ViT's
    rotor plan at α = 0.1 measured 79 % below its prediction; VGG-11's
    −12 … −16 % in scripts/allocator_table.py); a tied weight's
    gradient booked outside with set_to_none=False → GPT-2's rotor plan at
    α = 0.1 measured 24 % over (the runtime holds that gradient from the
    head's backward to the step's end); the chain without its
    `parameter_gradient_bytes` (set_to_none=True) → M_high below the plain
    step's peak by the gradients (ResNet −32.6 %, ViT −57.0 %; GPT-2
    unchanged: its peak is in the head, before any gradient exists)."""
    model, batch, target, loss = MODELS[which]()
    chain = describe_chain(model, batch, target, loss=loss, repeat=1, set_to_none=set_to_none)
    g = sum(s.get("parameter_gradient_bytes", 0) for s in chain["stages"])
    if set_to_none:
        assert g > 0, chain
    else:
        # Only a tied weight's (GPT-2's embedding), held to the step's end.
        program = make_program(model, batch, target, loss)
        tied = remat_torch.step_inputs.shared_parameters(program, len(program))
        assert g == sum(p.numel() * p.element_size() for p in tied), (g, [p.shape for p in tied])
    chain_path = tmp_path / "chain.json"
    chain_path.write_text(json.dumps(chain))
    plain = plain_step_peak(model, batch, target, loss, set_to_none=set_to_none)
    store_all, _ = _solve(tmp_path, chain_path, "store-all", "100%")
    m_high, m_low = store_all["m_high_bytes"], store_all["m_low_bytes"]
    assert abs(m_high / plain["peak_bytes"] - 1) <= 0.03, (m_high, plain)

    reset = _state(model)
    reset()
    expected = remat_torch.staging.model_loss(model, loss, batch, target)
    expected.backward()
    want = _grads(model)
    rows = []
    for algorithm in ("rotor", "revolve", "sequential"):
        for alpha in (0.1, 0.5, 0.9):
            budget = m_low + round(alpha * (m_high - m_low))
            result, path = _solve(tmp_path, chain_path, algorithm, budget)
            if not result["feasible"]:
                continue
            step = checkpointed(model, str(path), loss=loss)
            reset()
            step(batch, target)  # finds the stages once for this shape
            reset()
            if not set_to_none:
                # As a loop that zeroes in place: the `.grad`s exist when
                # the step starts (outside the count, added into).
                for p in model.parameters():
                    p.grad = torch.zeros_like(p)
            got, measured = step.measure_step(batch, target, set_to_none=set_to_none)
            predicted = result["predicted_peak_bytes"]
            rows.append((algorithm, alpha, predicted, measured))
            assert torch.equal(got, expected.detach().float()), (algorithm, alpha)
            assert _same(_grads(model), want), (algorithm, alpha)
            # The bound is +3 % / −6 %; these runs are exact to a
            # few bytes (the 0-d anchor), so 0.5 % catches regressions that
            # a small model's slack would hide.
            assert predicted * 0.94 <= measured <= predicted * 1.03, rows
            assert abs(measured / predicted - 1) <= 0.005, rows
    assert len(rows) >= 6, rows


def test_transformers_own_loss_with_labels_in_the_batch(tmp_path):
    """transformers computes the loss itself when `labels` is an input: the
    loss function reads it from the output, and a step through a plan that
    recomputes trains as a plain one (loss and gradients bitwise). The
    labels are the input ids themselves; transformers shifts them (a copy,
    made among the step constants), so the ids are read by the embedding
    alone and may be a^0. Fails if the chain's a^0 is not what the runtime
    moves (`StepInputs`), or if the plan's step differs from the model's
    own."""
    model, batch, ids, _ = gpt2()
    batch = {**batch, "labels": ids}

    def hf_loss(out, _target):
        return out.loss

    chain = describe_chain(model, batch, None, loss=hf_loss, repeat=1)
    assert [s["name"] for s in chain["stages"]][-1] == "transformer.ln_f+lm_head+loss"
    assert {i["name"] for i in chain["inputs"]} == {"input_ids", "labels"}  # use_cache is no tensor
    program = make_program(model, batch, None, hf_loss)
    step_inputs = remat_torch.step_inputs.StepInputs(program, batch, None, program.constants(batch, None), [])
    assert chain["input_bytes"] == step_inputs.input_bytes
    assert f"step constants ({step_inputs.constant_bytes} B" in chain["source"]
    (tmp_path / "c.json").write_text(json.dumps(chain))
    ref = json.loads(remat("solve", str(tmp_path / "c.json"), "-a", "rotor", "-b", "100%", "--json").stdout)
    remat("solve", str(tmp_path / "c.json"), "-a", "rotor", "-b", str(ref["m_low_bytes"]), "-o", str(tmp_path / "s.json"))
    reset = _state(model)
    reset()
    want = model(**batch).loss
    want.backward()
    grads = _grads(model)
    reset()
    got = checkpointed(model, str(tmp_path / "s.json"), loss=hf_loss)(batch, None)
    assert torch.equal(got, want.detach().float())
    assert _same(_grads(model), grads)


def test_under_autocast_the_stages_are_those_of_the_autocast_step():
    """Described under `torch.autocast` (bf16 on the CPU), the stages are
    checked against the model's own autocast step bit for bit, and ā of a
    block is smaller than in fp32 (bf16 activations)."""
    model, batch, ids, loss = gpt2()
    fp32 = describe_chain(model, batch, ids, loss=loss, repeat=1)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        bf16 = describe_chain(model, batch, ids, loss=loss, repeat=1)
    assert bf16["stages"][1]["saved_bytes"] < fp32["stages"][1]["saved_bytes"]


def test_a_llama_takes_the_attention_path_it_takes_eagerly(tmp_path):
    """transformers decides its attention path by asking whether it is being
    exported: exported, it builds the causal mask and repeats the keys and
    values of a GQA model; eagerly, with no padding mask, it passes
    `is_causal=True` and `enable_gqa`. The stages must be captured on the
    eager path, or M_high describes another computation than the user's
    (mutation tried: `_eager_paths` a no-op — M_high 3.2 % above the plain
    step on this Llama, 30 % below on an 8-layer one on an H200, where the
    eager GQA fell to SDPA's math kernel)."""
    model, batch, ids, loss = llama()
    batch = {k: v for k, v in batch.items() if k != "attention_mask"}
    staged = remat_torch.find_stages(model, batch, ids, loss)
    sdpa = [n for s in staged.stages for n in s.module.graph.nodes
            if "scaled_dot_product_attention" in str(n.target)]
    assert sdpa and all(n.kwargs.get("enable_gqa") for n in sdpa)
    chain = describe_chain(model, batch, ids, loss=loss, repeat=1)
    chain_path = tmp_path / "chain.json"
    chain_path.write_text(json.dumps(chain))
    store_all, _ = _solve(tmp_path, chain_path, "store-all", "100%")
    plain = plain_step_peak(model, batch, ids, loss)
    assert abs(store_all["m_high_bytes"] / plain["peak_bytes"] - 1) <= 0.01, (store_all["m_high_bytes"], plain)


def test_paths_compiled_captures_the_path_torch_compile_takes(tmp_path):
    """`paths="compiled"` captures the attention path transformers takes
    under `torch.compile` (on torch < 2.14 dynamo answers "exporting", so
    it builds the causal mask and repeats a GQA model's keys and values,
    as a whole compiled model does: the chain of `scripts/peers.py`'s
    whole-model variant is then the peer's own graph), and the stages
    still give the model's own step (`describe_chain`'s check) and run a
    plan bitwise like the plain step. How it could fail: `paths` not
    reaching `_export` (mutation tried: `_export` reading `_as_compiled` as False → the
    SDPA nodes keep `enable_gqa` and no mask, fails), or not in
    `make_program`'s key (the eager path's stages reused: fails the same),
    or a bad value taken for "eager" (refused naming `paths`)."""
    model, batch, ids, loss = llama()
    batch = {k: v for k, v in batch.items() if k != "attention_mask"}

    def sdpa(paths):
        staged = remat_torch.find_stages(model, batch, ids, loss, paths=paths)
        return [n for s in staged.stages for n in s.module.graph.nodes
                if "scaled_dot_product_attention" in str(n.target)]

    eager, compiled = sdpa("eager"), sdpa("compiled")
    assert len(eager) == len(compiled) > 0
    major, minor = (int(x) for x in torch.__version__.split(".")[:2])
    if (major, minor) < (2, 14):
        masked = [n for n in compiled if n.kwargs.get("attn_mask") is not None or
                  (len(n.args) > 3 and n.args[3] is not None)]
        assert len(masked) == len(compiled) and not any(n.kwargs.get("enable_gqa") for n in compiled), compiled
    with pytest.raises(remat_torch.StagingError, match="paths: expected"):
        remat_torch.find_stages(model, batch, ids, loss, paths="dynamo")
    chain = describe_chain(model, batch, ids, loss=loss, repeat=1, paths="compiled", progress=False)
    chain_path = tmp_path / "chain.json"
    chain_path.write_text(json.dumps(chain))
    _, plan_path = _solve(tmp_path, chain_path, "rotor", "60%")
    reset = _state(model)
    reset()
    loss(model(**batch), ids).backward()
    want = [p.grad.clone() for p in model.parameters()]
    reset()
    step = remat_torch.checkpointed(model, str(plan_path), loss=loss, chain=chain, paths="compiled")
    step(batch, ids)
    assert all(torch.equal(p.grad, w) for p, w in zip(model.parameters(), want))


def test_a_capture_on_the_compiled_path_is_checked_against_the_step_on_that_path(tmp_path):
    """On torch < 2.14 a GQA Llama's compiled path (causal mask, keys and
    values repeated per head group) rounds otherwise than its eager path:
    at 2×64 tokens the two steps' gradients differ (asserted, so the check
    below has something to catch). `describe_chain(paths="compiled")`
    checks the stages against the step run on the path they captured
    (`staging.running_on`), so it accepts them, and a plan over them
    trains bit for bit as that step. How it could fail: `_verify`'s
    reference run on the eager path whatever `paths` (mutation tried:
    `running_on("eager")` there — describe_chain refuses, "gradients
    differ … 9.31e-09"), `running_on` not taking the compiled path (the
    two steps' gradients equal: fails the first assert), or the answer
    left patched after the step (`torch.compiler.is_exporting()` still
    True: asserted False)."""
    if not remat_torch.staging._dynamo_says_exporting():
        pytest.skip("torch ≥ 2.14: dynamo no longer answers \"exporting\"; both paths are the eager one")
    model, batch, ids, _ = llama(tokens=64)
    batch = {k: v for k, v in batch.items() if k != "attention_mask"}
    reset = _state(model)

    def grads(paths):
        reset()
        with remat_torch.staging.running_on(paths):
            lm_loss(model(**batch), ids).backward()
        return [p.grad.clone() for p in model.parameters()]

    eager, compiled = grads("eager"), grads("compiled")
    assert not torch.compiler.is_exporting()
    assert not all(torch.equal(a, b) for a, b in zip(eager, compiled))
    chain = describe_chain(model, batch, ids, loss=lm_loss, repeat=1, paths="compiled", progress=False)
    chain_path = tmp_path / "chain.json"
    chain_path.write_text(json.dumps(chain))
    _, plan_path = _solve(tmp_path, chain_path, "rotor", "60%")
    reset()
    step = remat_torch.checkpointed(model, str(plan_path), loss=lm_loss, chain=chain, paths="compiled")
    step(batch, ids)
    assert all(torch.equal(p.grad, w) for p, w in zip(model.parameters(), compiled))


@pytest.mark.parametrize("which", ["gpt2", "llama"])
def test_a_loss_apart_frees_the_logits_as_its_backward_starts(which, tmp_path):
    """With the loss a stage of its own, neither its backward (cross-entropy
    reads its softmax) nor the head's (it reads its input) reads the logits:
    `describe_chain` finds it (ι^L, `input_freed_bytes`, the whole logits,
    and on no block stage: a block's backward reads its input), and the
    runtime drops them as B^L starts, through a joined engine call or not
    (`join_backwards=False`: the head's output traded for an `EarlySeed`).
    Every rotor, revolve and sequential plan at α = 0.1, 0.5, 0.9 and
    store-all then peak within 0.5 % of the prediction, bitwise against a
    plain step (measured: within 12 bytes on all 20 runs of each model).
    Mutations run: the core without ι (B^L booked beside the whole logits)
    → store-all predicted 248,000 B over its measured peak (GPT-2 2,823,060
    vs 2,575,060, −8.8 %; the Llama −14.9 %); `Step.drop_input` not trading
    ā^{L-1}'s output for an `EarlySeed` → with `join_backwards=False` the
    peak over the prediction by as much (+9.6 %, +17.6 %)."""
    model, batch, target, loss = {"gpt2": gpt2, "llama": llama}[which]()
    chain = describe_chain(model, batch, target, loss=loss, repeat=1, loss_apart=True, progress=False)
    stages = chain["stages"]
    assert stages[-1]["name"] == "loss"
    assert stages[-1].get("input_freed_bytes") == stages[-2]["output_bytes"] > 0, stages[-1]
    assert all("input_freed_bytes" not in s for s in stages[:-1]), stages
    chain_path = tmp_path / "chain.json"
    chain_path.write_text(json.dumps(chain))
    store_all, store_all_path = _solve(tmp_path, chain_path, "store-all", "100%")
    m_high, m_low = store_all["m_high_bytes"], store_all["m_low_bytes"]
    reset = _state(model)
    reset()
    expected = loss(model(**batch), target)
    expected.backward()
    want = _grads(model)
    plans = [("store-all", 1.0, store_all, store_all_path)]
    for algorithm in ("rotor", "revolve", "sequential"):
        for alpha in (0.1, 0.5, 0.9):
            result, path = _solve(tmp_path, chain_path, algorithm, m_low + round(alpha * (m_high - m_low)))
            if result["feasible"]:
                plans.append((algorithm, alpha, result, path))
    rows = []
    for algorithm, alpha, result, path in plans:
        for join in (True, False):
            step = checkpointed(model, str(path), loss=loss, loss_apart=True, join_backwards=join)
            reset()
            step(batch, target)
            reset()
            got, measured = step.measure_step(batch, target)
            predicted = result["predicted_peak_bytes"]
            rows.append((algorithm, alpha, join, predicted, measured))
            assert torch.equal(got, expected.detach().float()), rows[-1]
            assert _same(_grads(model), want), rows[-1]
            assert abs(measured / predicted - 1) <= 0.005, rows
    assert len(rows) >= 10, rows
