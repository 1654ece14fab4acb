"""The README's flow end to end: describe the network's chain in Python,
plan with `remat solve`, train a few steps with the wrapper and an
optimizer, and land on exactly the parameters of plain training."""

from __future__ import annotations

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
    between calls). Mutation tried: the recomputation's RNG not forked
    (fork_rng removed, set_rng_state kept: the global stream is left at the
    recomputed stage's state) → the losses and parameters differ from plain
    training's."""
    net, x, target = NETWORKS[name]()
    twin = copy.deepcopy(net)
    chain = remat_torch.describe_chain(net, x, target, name=name, bandwidth_bytes_per_s=12e9)
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
