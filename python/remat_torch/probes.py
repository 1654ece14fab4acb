"""What a chain is held to, measured on the user's own setup: the peak of
one plain training step (the figure M_high is checked against) and the
bandwidth an offload moves at (the chain's β). Both run the model as the
runtime does, so they sit above `measure` (the allocator's count) and
`runtime` (a step's inputs, the host pool) and below nothing.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import torch
from torch import nn

from .batch import device_of
from .host import host_buffer
from .measure import Meter, TrainingState
from .step_inputs import StepInputs, booked_outside, fixed_tensors
from .staging import StageList, make_program, model_loss


def plain_step_peak(
    model: nn.Module,
    batch: Any,
    target: Any,
    loss: Optional[Callable] = None,
    set_to_none: bool = True,
) -> dict:
    """The activation peak of one plain training step, the figure a chain's
    M_high is held to: over `loss(model(batch), target).backward()` with the
    parameter gradients set to none before, the maximum of the allocator's
    live bytes minus those live before the forward, plus the batch's and the
    target's bytes (a^0; step constants made in the forward are in the live
    bytes already). With `set_to_none=False` (a chain described so) the
    parameter gradients are left out from the moment each is accumulated,
    as they live outside the chain with the weights.

    Without `loss`, `model` is a list or `nn.Sequential` of stages whose last
    one takes `(activation, target)` and returns the loss. Parameter
    gradients, buffers and the RNG state are restored afterwards.
    Returns `{"peak_bytes", "batch_bytes", "loss"}`.
    """
    stages = StageList(list(model)) if loss is None else None
    modules = stages.modules if stages is not None else [model]
    params = [p for m in modules for p in m.parameters()]
    device = device_of(batch)
    state = TrainingState(params, [b for m in modules for b in m.buffers()], device)
    state.reset()

    def step():
        if stages is not None:
            out = batch
            for l in range(1, len(stages) + 1):
                out = stages.run(l, out, [target])
        else:
            out = model_loss(model, loss, batch, target)
        out.backward()
        return out.detach()

    program = stages if stages is not None else make_program(model, batch, target, loss)
    inputs = StepInputs(program, batch, target, program.constants(batch, target), fixed_tensors(program))
    try:
        value, _, peak = Meter(device, booked_outside(program, set_to_none)).measure(step)
    finally:
        state.restore()
    # In the chain's terms: a^0 is the batch's movable part, the step
    # constants are outside (`remat_torch.step_inputs.StepInputs`); the plain
    # forward makes its masks and position ids inside the count, as the
    # staged step makes its constants.
    return {"peak_bytes": peak + inputs.offset_bytes, "batch_bytes": inputs.input_bytes,
            "constant_bytes": inputs.constant_bytes, "loss": float(value)}


def host_bandwidth(device, nbytes: int = 256 << 20, repeat: int = 5) -> float:
    """β for a chain: the bytes per second an offload or a prefetch moves,
    measured as the runtime moves them — on CUDA between the device and
    pinned host memory, on the copy stream (the median over both
    directions and `repeat` copies); on the CPU between the allocator's
    memory and the host pool outside it (a memcpy). A chain made with an
    assumed β mispredicts every offloading plan: at 12 GB/s on an H200
    (whose link moves several times that) offload-only's predicted peak
    was 8–17 % above the measured one."""
    import statistics
    import time

    device = torch.device(device)
    times = []
    if device.type == "cuda":
        dev = torch.empty(nbytes, dtype=torch.uint8, device=device)
        host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
        stream = torch.cuda.Stream(device=device)
        for _ in range(repeat + 1):
            for src, dst in ((dev, host), (host, dev)):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                with torch.cuda.stream(stream):
                    start.record(stream)
                    dst.copy_(src, non_blocking=True)
                    end.record(stream)
                end.synchronize()
                times.append(start.elapsed_time(end) / 1000)
        times = times[2:]  # the first pair warms the link up
    else:
        nbytes = min(nbytes, 64 << 20)
        dev = torch.empty(nbytes, dtype=torch.uint8)
        host = host_buffer(nbytes)
        for _ in range(repeat + 1):
            for src, dst in ((dev, host), (host, dev)):
                t = time.perf_counter()
                dst.copy_(src)
                times.append(time.perf_counter() - t)
        times = times[2:]
    return nbytes / statistics.median(times)
