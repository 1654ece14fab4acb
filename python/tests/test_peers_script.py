"""`scripts/peers.py`'s pieces that shape what the page draws."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))

import peers  # noqa: E402


def _chain():
    return {"stages": [
        {"forward_seconds": 1.0, "forward_nograd_seconds": 0.9, "backward_seconds": 2.0,
         "menu": [{"policy": "p", "backward_extra_seconds": 0.5}]},
        {"forward_seconds": 3.0, "forward_nograd_seconds": 3.0, "backward_seconds": 4.0},
    ]}


def test_a_chain_is_put_on_the_clock_its_peers_were_timed_on():
    """The chain's times (stage and menu) are scaled by the median of its
    plans' measured over predicted steps, so the page compares the peers'
    measured times with curves on the same clock. How it could fail: the
    mean taken (1.4 here, not 1.2), the menu's extra time left unscaled,
    a row whose plan did not run (an error) counted, or no answer when no
    plan ran (mutations tried: `statistics.mean` → 1.4 ≠ 1.2, fails; the
    `if not ratios` guard removed → StatisticsError on the error-only
    rows, fails)."""
    rows = [{"remat-compiled": {"predicted_seconds": 1.0, "seconds": s}} for s in (1.1, 1.2, 1.9)]
    rows.append({"remat-compiled": {"error": "below the least memory"}})
    chain = _chain()
    factor = peers.on_the_rounds_clock(chain, rows)
    assert abs(factor - 1.2) < 1e-12
    first, second = chain["stages"]
    assert abs(first["forward_seconds"] - 1.2) < 1e-12 and abs(second["backward_seconds"] - 4.8) < 1e-12
    assert abs(first["forward_nograd_seconds"] - 1.08) < 1e-12
    assert abs(first["menu"][0]["backward_extra_seconds"] - 0.6) < 1e-12
    untouched = _chain()
    assert peers.on_the_rounds_clock(untouched, [{"remat-compiled": {"error": "x"}}]) is None
    assert untouched == _chain()


def _tolerance_of(model, x, offset=0.0):
    """`peers.gradient_tolerance` of `model`'s step on `x` (the loss the
    output's sum plus `offset`), from one RNG state."""
    import torch

    loss = lambda out, target: out.sum() + offset  # noqa: E731
    rng = torch.get_rng_state()
    out = loss(model(x), None)
    out.backward()
    grads = [p.grad.clone() for p in model.parameters()]
    return peers.gradient_tolerance(model, x, None, loss, out, grads, rng)


def test_right_gradients_are_judged_against_the_models_own_float32_error():
    """How far a peer's gradients may be from the reference: 4× how far
    plain float32 is from float64 on this model, never below 1e-4; and
    the 1e-4 floor alone where the float64 step draws other random numbers.

    How it fails: a fixed 1e-4 (mutation `return 1e-4, noise`) gives 1e-4
    where the cancelling sum's float32 gradient is off by 1.0 of its
    largest value; `max(1e-4, noise)` gives 1.0, not 4.0; without the
    loss comparison the random model's noise is a number, not None."""
    import torch

    # The gradient of w is the sum of x: 1 in float64, 0 in float32
    # (1e8 + 1 rounds to 1e8); the loss, w times that sum plus 1e6, agrees
    # in both to 1e-6 of its value, so float64 is a reference.
    cancelling = torch.nn.Linear(1, 1, bias=False)
    x = torch.tensor([[1e8], [1.0], [-1e8]])
    tolerance, noise = _tolerance_of(cancelling, x, offset=1e6)
    assert noise == 1.0 and tolerance == 4.0, (tolerance, noise)

    torch.manual_seed(0)
    tame = torch.nn.Linear(8, 4)
    tolerance, noise = _tolerance_of(tame, torch.randn(16, 8))
    assert noise < 1e-6 and tolerance == 1e-4, (tolerance, noise)

    class Noisy(torch.nn.Module):
        """Draws uniform numbers like its input: float64 takes other bits
        of the generator than float32."""

        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 4)

        def forward(self, x):
            return self.lin(x + torch.rand_like(x))

    tolerance, noise = _tolerance_of(Noisy(), torch.randn(16, 8))
    assert noise is None and tolerance == 1e-4, (tolerance, noise)
