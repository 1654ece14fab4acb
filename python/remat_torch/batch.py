"""A batch as the model takes it: a tensor (its positional input) or a dict
of keyword inputs (`input_ids`, `attention_mask`, `use_cache`, …)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import torch


def leaves(batch: Any) -> List[Any]:
    """The batch's values: the tensor itself, or the dict's values."""
    return list(batch.values()) if isinstance(batch, dict) else [batch]


def device_of(batch: Any) -> torch.device:
    """The device of the batch's first tensor (the CPU if it has none)."""
    for t in leaves(batch):
        if isinstance(t, torch.Tensor):
            return t.device
    return torch.device("cpu")


def describe(batch: Any, target: Any) -> List[Dict[str, Any]]:
    """The batch's tensors (and the target) as a chain's `inputs` lists
    them: `{"name", "shape", "dtype"}`."""
    items = list(batch.items()) if isinstance(batch, dict) else [("", batch)]
    if isinstance(target, torch.Tensor):
        items.append(("target", target))
    return [
        {"name": k, "shape": list(v.shape), "dtype": str(v.dtype).replace("torch.", "")}
        for k, v in items
        if isinstance(v, torch.Tensor)
    ]


class BatchMismatch(ValueError):
    """A batch of other shapes or element types than the plan's."""


def _show(t: Dict[str, Any]) -> str:
    return f"{t['dtype']} {t['shape']}"


def compare(got: List[Dict[str, Any]], want: List[Dict[str, Any]], plan: str,
            smaller_batch: bool) -> Optional[str]:
    """None when `got` is the batch the plan was made for; a warning when it
    is a smaller batch and `smaller_batch` allows it; BatchMismatch
    otherwise, naming the first tensor that differs."""
    by_name = {t["name"] or "input": t for t in want}
    names = [t["name"] or "input" for t in got]
    advice = ("describe the chain for this batch and solve again, or pass smaller_batch=True to "
              "run a smaller batch under this plan (its memory is then an upper bound)")
    missing = sorted(set(by_name) - set(names))
    extra = sorted(set(names) - set(by_name))
    if missing or extra:
        what = f"{missing[0]} is missing" if missing else f"{extra[0]} is not in the plan's batch"
        raise BatchMismatch(f"batch: {what} (the plan was made for {', '.join(by_name)}); {advice}")
    smaller = []
    for name, t in zip(names, got):
        w = by_name[name]
        if t["dtype"] == w["dtype"] and t["shape"] == w["shape"]:
            continue
        shrunk = (
            smaller_batch and t["dtype"] == w["dtype"] and len(t["shape"]) == len(w["shape"])
            and t["shape"][1:] == w["shape"][1:] and t["shape"][:1] <= w["shape"][:1]
        )
        if not shrunk:
            raise BatchMismatch(f"batch: {name} is {_show(t)}, the plan {plan} was made for {_show(w)}; {advice}")
        smaller.append(f"{name} {t['shape']} (plan: {w['shape']})")
    if smaller:
        return (f"a smaller batch than the plan's ({', '.join(smaller)}): the plan's predicted memory "
                "is an upper bound for it, not a prediction")
    return None
