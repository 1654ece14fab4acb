"""The RNG states a recomputation replays, kept as Python bytes.

A CPU RNG state is a 5 KiB uint8 tensor from the CPU allocator, which on
the CPU is the device's memory: kept as tensors, a dozen of them would show
in a measured peak. Bytes live outside every allocator the meters watch.
No NumPy: torch does not depend on it, and `Tensor.numpy()` fails where it
is not installed.
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch


def state_bytes(state: torch.Tensor) -> bytes:
    """A uint8 state tensor's bytes."""
    return bytes(state.tolist())


def bytes_tensor(data: bytes) -> torch.Tensor:
    """Bytes as a uint8 tensor over Python's memory (no allocator call)."""
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


def current(device: torch.device) -> Tuple[bytes, Optional[bytes]]:
    """(the CPU state, the CUDA state of `device` or None off CUDA)."""
    cpu = state_bytes(torch.get_rng_state())
    cuda = state_bytes(torch.cuda.get_rng_state(device)) if device.type == "cuda" else None
    return cpu, cuda


def restore(cpu: bytes, cuda: Optional[bytes], device: torch.device) -> None:
    """Sets the states `current` returned."""
    torch.set_rng_state(bytes_tensor(cpu))
    if cuda is not None:
        torch.cuda.set_rng_state(bytes_tensor(cuda), device)
