"""Host memory outside the device's count: where an offload copies to.

On CUDA that is any CPU tensor (pinned for the copy stream); on the CPU
"device" it is a pool outside PyTorch's CPU allocator, so that an offload
measured on a machine without a GPU frees what it moves.
"""

from __future__ import annotations

import torch


def host_copy(t: torch.Tensor) -> torch.Tensor:
    """A copy of `t` in host memory outside the device's count: on CUDA a
    CPU tensor, on the CPU one over a `host_buffer`."""
    if t.device.type != "cpu":
        return t.detach().to("cpu")
    out = host_buffer(t.numel() * t.element_size()).view(t.dtype).view(t.shape)
    out.copy_(t.detach())
    return out


def host_buffer(nbytes: int) -> torch.Tensor:
    """Host memory for an offload from the CPU "device": a Python bytearray
    seen as a tensor, from the C allocator rather than PyTorch's CPU
    allocator. On the CPU the device's memory *is* that allocator (what
    `remat_torch.measure` counts), so a host copy taken from it would make
    an offload free nothing — as pinned memory on CUDA lies outside the
    device's count, this pool lies outside the CPU's, and offloading plans
    can be run and measured on a machine without a GPU. (The copies stay
    synchronous: times are not those of a PCIe link.)"""
    return torch.frombuffer(bytearray(nbytes), dtype=torch.uint8)
