"""Solving a chain in this process: remat-core's planners, compiled into the
package (`remat_torch._solver`, crates/remat-py, built by maturin), so no
`remat` binary is needed.

    chain = remat_torch.describe_chain(model, batch, target, loss=fn)
    plan = remat_torch.solve(chain, "rotor", budget="50%")
    step = remat_torch.checkpointed(model, plan, loss=fn)

`solve` answers what `remat solve CHAIN -a ALGORITHM -b BUDGET -o FILE`
writes to FILE (the same planner, the same simulator's prediction):
a `remat-schedule/1` dict. The command line stays the tool for everything
else (sweeps, comparisons, exports, the explorer's files).
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Union

ChainLike = Union[Dict[str, Any], str, "os.PathLike[str]"]


def _solver():
    try:
        from . import _solver
    except ImportError as e:  # a copy of the sources, not an installed build
        raise ImportError(
            "remat_torch._solver is missing: this remat_torch was imported from its sources, not installed. "
            "Install it with `pip install ./python` (it builds the solver with Rust's cargo), or solve with "
            "the `remat` binary: `remat solve chain.json -a rotor -b 50% -o plan.json`") from e
    return _solver


def _chain_text(chain: ChainLike) -> str:
    if isinstance(chain, dict):
        return json.dumps(chain)
    if isinstance(chain, (str, os.PathLike)):
        path = os.fspath(chain)
        try:
            with open(path, encoding="utf-8") as f:
                return f.read()
        except OSError as e:
            raise ValueError(f"chain: cannot read {path!r}: {e.strerror or e}") from None
    raise TypeError(f"chain: expected a chain dict (describe_chain's) or a path to a chain file, "
                    f"got {type(chain).__name__}")


def _text(value: Any, name: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise TypeError(f"{name}: expected a string such as '50%' or '8GiB', or a number of bytes, "
                        f"got {type(value).__name__}")
    if isinstance(value, float) and value != value:
        raise ValueError(f"{name}: NaN is not a size")
    return value if isinstance(value, str) else repr(value)


def solve(chain: ChainLike, algorithm: str = "rotor", budget: Union[str, int, float] = "100%",
          bandwidth: Union[str, float, None] = None) -> Optional[Dict[str, Any]]:
    """The schedule `algorithm` makes for `chain` at `budget`, judged by the
    simulator: a `remat-schedule/1` dict (its `predicted` holds the peak and
    the step's time), ready for `checkpointed`. None when no schedule of
    this algorithm meets the budget.

    chain: a dict (`describe_chain`'s) or the path of a chain file.
    algorithm: a name from `algorithms()` ("rotor", "pofo", …).
    budget: "8GiB", "3e9", a number of bytes, or "60%" of M_high (the
        store-all peak).
    bandwidth: the host link for the offloading algorithms ("12GB/s";
        the chain's own when None).

    Bad input raises ValueError naming the argument (and the chain's field:
    "chain: stages[2].saved_bytes: …"), as does a budget below the least
    any schedule needs. The planner runs with the GIL released."""
    if not isinstance(algorithm, str):
        raise TypeError(f"algorithm: expected a name such as 'rotor', got {type(algorithm).__name__}")
    text = _solver().solve(_chain_text(chain), algorithm, _text(budget, "budget"),
                           None if bandwidth is None else _text(bandwidth, "bandwidth"))
    return None if text is None else json.loads(text)


def size_bytes(budget: Union[str, int, float]) -> int:
    """A budget in bytes ("118MiB", "3e9", 123456) as a whole number, read
    as `solve` reads it; ValueError naming `budget` otherwise (a share of
    M_high included: it is a number only for one chain)."""
    if isinstance(budget, bool) or not isinstance(budget, (str, int, float)):
        raise ValueError(f"budget: expected bytes such as '120MiB', got {budget!r}")
    return _solver().size_bytes(_text(budget, "budget"))


def constant_bytes(chain: ChainLike) -> Optional[int]:
    """The chain's step constants (`constant_bytes`, docs/formats.md), held
    outside its memory as the weights are; None when it does not say."""
    if not isinstance(chain, dict):
        chain = json.loads(_chain_text(chain))
    value = chain.get("constant_bytes")
    return None if value is None else int(value)


def algorithms() -> List[str]:
    """Every algorithm `solve` takes, by name."""
    return list(_solver().algorithms())
