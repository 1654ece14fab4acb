"""The README's flow end to end: describe the network's chain in Python,
plan with `remat solve`, train a few steps with the wrapper and an
optimizer, and land on exactly the parameters of plain training."""

from __future__ import annotations

import contextlib
import copy
import json

import pytest
import torch

import remat_torch

from helpers import NETWORKS, remat, solve


@pytest.mark.parametrize("name", list(NETWORKS))
def test_training_with_a_rotor_schedule_matches_plain_training(tmp_path, name):
    """Three SGD-with-momentum steps on the same batches, from the same RNG
    state: parameters, BatchNorm statistics and losses bitwise equal. Fails
    if anything leaks from one step into the next (gradients not
    accumulated like loss.backward(), buffers updated by recomputations,
    the RNG stream shifted by a recomputation, a wrapper that keeps state
    between calls). Mutation tried: the RNG state not put back after a
    recomputation (the global stream is left at the recomputed stage's
    state) → the losses and parameters differ from plain training's."""
    net, x, target = NETWORKS[name]()
    twin = copy.deepcopy(net)
    # The gradients outside (`set_to_none=False`): the small MLP's weights
    # outweigh its activations, and counted in the chain its gradients
    # would leave recomputation nothing to save (M_low = M_high).
    chain = remat_torch.describe_chain(net, x, target, name=name, bandwidth_bytes_per_s=12e9, set_to_none=False)
    (tmp_path / "chain.json").write_text(json.dumps(chain))
    ref = solve(tmp_path / "chain.json", tmp_path / "s.json", "-a", "rotor", "-b", "100%")
    report = solve(tmp_path / "chain.json", tmp_path / "s.json", "-a", "rotor", "-b", str(ref["m_low_bytes"]))
    assert report["feasible"] and report["recomputations"] > 0, report

    step = remat_torch.checkpointed(twin, tmp_path / "s.json")
    opt_plain = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    opt = torch.optim.SGD(twin.parameters(), lr=0.1, momentum=0.9)
    gen = torch.Generator().manual_seed(7)
    torch.manual_seed(99)
    batches = [(torch.randn(x.shape, generator=gen), torch.randint(0, 10, target.shape, generator=gen))
               for _ in range(3)]
    state = torch.get_rng_state()
    plain_losses = []
    for xb, tb in batches:
        opt_plain.zero_grad()
        a = xb
        for stage in list(net)[:-1]:
            a = stage(a)
        loss = list(net)[-1](a, tb)
        loss.backward()
        opt_plain.step()
        plain_losses.append(loss.detach().float())
    torch.set_rng_state(state)
    losses = []
    for xb, tb in batches:
        opt.zero_grad()
        losses.append(step(xb, tb))
        opt.step()
    assert all(torch.equal(a, b) for a, b in zip(losses, plain_losses)), (losses, plain_losses)
    for (n, p), q in zip(net.named_parameters(), twin.parameters()):
        assert torch.equal(p, q), n
    for (n, b), c in zip(net.named_buffers(), twin.buffers()):
        assert torch.equal(b, c), n


@pytest.mark.parametrize("name", list(NETWORKS))
def test_describe_chain_is_a_valid_chain_with_the_tensors_sizes(tmp_path, name):
    """describe_chain's file is accepted by `remat` and its sizes are the
    tensors': ω_a^ℓ the output (4 bytes for the loss), ω_ā^ℓ ≥ ω_a^ℓ, and
    larger where the stage saves more than its output (Dropout's mask,
    BatchNorm's input when not in place). Fails if the hooks count the
    input or a parameter as saved (mutation tried: no exclusion of the
    input → a Linear stage's ω_ā^ℓ grows by its input's size), and leaves
    the network as it found it (grads, buffers, RNG)."""
    net, x, target = NETWORKS[name]()
    rng = torch.get_rng_state()
    buffers = [b.clone() for b in net.buffers()]
    chain = remat_torch.describe_chain(net, x, target, repeat=1)
    assert torch.equal(torch.get_rng_state(), rng)
    assert all(torch.equal(a, b) for a, b in zip(buffers, net.buffers()))
    assert all(p.grad is None for p in net.parameters())
    (tmp_path / "c.json").write_text(json.dumps(chain))
    remat("solve", str(tmp_path / "c.json"), "-a", "store-all", "-b", "100%")
    a = x
    for l, (stage, desc) in enumerate(zip(net, chain["stages"]), start=1):
        with torch.no_grad():
            a = stage(a, target) if l == len(net) else stage(a)
        assert desc["output_bytes"] == a.numel() * a.element_size(), desc
        kind = type(stage).__name__
        if kind in ("Linear", "ReLU", "Tanh", "Conv2d", "Flatten"):
            # Linear/Conv save their input (a^{ℓ-1}, not ā^ℓ) and weight;
            # ReLU/Tanh their output: ā^ℓ = a^ℓ.
            assert desc["saved_bytes"] == desc["output_bytes"], desc
        if kind in ("Dropout", "Dropout2d", "BatchNorm2d", "MaxPool2d"):
            assert desc["saved_bytes"] > desc["output_bytes"], desc
    assert chain["input_gradient_bytes"] == 0  # stage 1 has parameters; x needs no grad


@pytest.mark.parametrize("name", list(NETWORKS))
def test_input_gradient_reaches_the_batch(tmp_path, name):
    """When the batch requires grad, B^1's δ^0 lands in x.grad as
    loss.backward() would put it. Mutation tried: δ^0 not copied to x.grad
    at the end of the step → x.grad is None."""
    net, x, target = NETWORKS[name]()
    twin = copy.deepcopy(net)
    chain = remat_torch.describe_chain(net, x, target, repeat=1)
    (tmp_path / "chain.json").write_text(json.dumps(chain))
    ref = solve(tmp_path / "chain.json", tmp_path / "s.json", "-a", "rotor", "-b", "100%")
    solve(tmp_path / "chain.json", tmp_path / "s.json", "-a", "rotor", "-b", str(ref["m_low_bytes"]))
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    torch.manual_seed(5)
    a = x1
    for stage in list(net)[:-1]:
        a = stage(a)
    list(net)[-1](a, target).backward()
    torch.manual_seed(5)
    remat_torch.checkpointed(twin, tmp_path / "s.json")(x2, target)
    assert x2.grad is not None and torch.equal(x1.grad, x2.grad)


def _gpt2():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=3, n_embd=32, n_head=2, vocab_size=100, n_positions=64,
                                  bos_token_id=0, eos_token_id=0)
    return transformers.GPT2LMHeadModel(cfg).train()


def _lm_loss(out, labels):
    logits = out.logits[:, :-1]
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1))


def _half_lm_loss(out, labels):
    # Two micro-batches per optimizer step: each loss scaled by 1/2, in the
    # loss function (the wrapper runs the backward itself).
    return _lm_loss(out, labels) / 2


def _batches(n, seed):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 100, (2, 16), generator=gen) for _ in range(n)]


@pytest.mark.parametrize("autocast", [False, True])
def test_a_training_loop_with_adam_accumulation_and_autocast(tmp_path, autocast):
    """A transformers GPT-2 trained as a user trains it — AdamW, two
    micro-batches accumulated per optimizer step, optionally under bf16
    autocast, labels that are the input ids — through a rotor plan at M_low
    that recomputes, against the same loop with plain autograd: losses and
    parameters bitwise equal after 3 optimizer steps. Fails if a step
    leaks into the next (.grad overwritten rather than accumulated, the RNG
    stream or dropout masks shifted by a recomputation), or if the tied
    embedding's two gradients (stage 1 and the LM head) are added to an
    accumulated .grad one by one instead of summed first as autograd does
    (mutation tried: the runtime's set-aside removed → the fifth loss
    differs by 2.4e-7). Gradient accumulation divides in the loss function:
    the wrapper runs the backward itself."""
    plain = _gpt2()
    twin = copy.deepcopy(plain)
    ids = _batches(1, 3)[0]
    batch = {"input_ids": ids, "use_cache": False}
    ctx = torch.autocast("cpu", dtype=torch.bfloat16) if autocast else contextlib.nullcontext()
    with ctx:
        chain = remat_torch.describe_chain(twin, batch, ids, loss=_half_lm_loss, repeat=1)
    (tmp_path / "c.json").write_text(json.dumps(chain))
    ref = solve(tmp_path / "c.json", tmp_path / "s.json", "-a", "rotor", "-b", "100%")
    report = solve(tmp_path / "c.json", tmp_path / "s.json", "-a", "rotor", "-b", str(ref["m_low_bytes"]))
    assert report["recomputations"] > 0, report
    step = remat_torch.checkpointed(twin, tmp_path / "s.json", loss=_half_lm_loss)
    micro = _batches(6, 11)
    results = []
    for model, run in ((plain, None), (twin, step)):
        torch.manual_seed(5)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        losses = []
        for k in range(0, len(micro), 2):
            opt.zero_grad()
            for ids_k in micro[k:k + 2]:
                b = {"input_ids": ids_k, "use_cache": False}
                # The usual recipe: the forward under autocast, the
                # backward outside it (as the wrapper runs its backwards).
                if run is None:
                    with ctx:
                        loss = _half_lm_loss(model(**b), ids_k)
                    loss.backward()
                    losses.append(loss.detach().float())
                else:
                    with ctx:
                        losses.append(run(b, ids_k))
            opt.step()
        results.append((losses, [p.detach().clone() for p in model.parameters()]))
    (lp, pp), (lt, pt) = results
    assert all(torch.equal(a, b) for a, b in zip(lp, lt)), [(a - b).item() for a, b in zip(lp, lt)]
    assert all(torch.equal(a, b) for a, b in zip(pp, pt))


def test_compiled_stages_train_through_the_plan(tmp_path):
    """Stages given as `torch.compile`d modules (backend aot_eager: a
    captured graph run through AOTAutograd, no C++ toolchain needed) run
    under a rotor plan that recomputes, with dropout: two SGD steps equal
    bit for bit those of the same compiled stages with plain autograd.
    Fails if the runtime's recomputation cannot replay a compiled stage
    (its RNG state: dropout masks would differ) or if the saved-tensor
    handling breaks compiled graphs' saved tensors."""
    net, x, target = NETWORKS["mlp"]()
    twin = copy.deepcopy(net)
    # The gradients outside, as in the test above: the MLP's would leave
    # nothing to recompute.
    chain = remat_torch.describe_chain(net, x, target, repeat=1, set_to_none=False)
    (tmp_path / "c.json").write_text(json.dumps(chain))
    ref = solve(tmp_path / "c.json", tmp_path / "s.json", "-a", "rotor", "-b", "100%")
    report = solve(tmp_path / "c.json", tmp_path / "s.json", "-a", "rotor", "-b", str(ref["m_low_bytes"]))
    assert report["recomputations"] > 0, report
    compiled = [torch.compile(m, backend="aot_eager") for m in net]
    compiled_twin = [torch.compile(m, backend="aot_eager") for m in twin]
    step = remat_torch.checkpointed(compiled_twin, tmp_path / "s.json")
    results = []
    for stages, run in ((compiled, None), (compiled_twin, step)):
        torch.manual_seed(1)
        params = [p for m in stages for p in m.parameters()]
        opt = torch.optim.SGD(params, lr=0.1)
        losses = []
        for _ in range(2):
            opt.zero_grad()
            if run is None:
                a = x
                for m in stages[:-1]:
                    a = m(a)
                loss = stages[-1](a, target)
                loss.backward()
                losses.append(loss.detach().float())
            else:
                losses.append(run(x, target))
            opt.step()
        results.append((losses, [p.detach().clone() for p in params]))
    (lp, pp), (lt, pt) = results
    assert all(torch.equal(a, b) for a, b in zip(lp, lt)), (lp, lt)
    assert all(torch.equal(a, b) for a, b in zip(pp, pt))
