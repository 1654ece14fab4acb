"""A batch as the model takes it: a tensor (its positional input) or a dict
of keyword inputs (`input_ids`, `attention_mask`, `use_cache`, …)."""

from __future__ import annotations

from typing import Any, List

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
