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
