"""Memory as the allocator sees it, parameter gradients inside or booked outside.

Sizes in a chain are what the allocator holds, never numel × element size:

* on CUDA, `torch.cuda.memory_allocated` and `max_memory_allocated` (the
  caching allocator's own count of bytes handed out, which is what runs out);
* on the CPU, the allocator's events seen by `torch.profiler` with
  `profile_memory=True`: PyTorch's CPU allocator reports every allocation and
  free with its size (`c10::reportMemoryUsageToProfiler`), oneDNN's blocked
  copies and scratchpads included (ideep allocates through c10, see
  docs/profiler.md), so the running sum of the events is the exact live
  count, and its maximum the peak. The profiler is on only while memory is
  measured; times are taken in separate runs with it off.

Parameter gradients are counted as the training loop makes them
(docs/model.md, "Parameter gradients"). With `zero_grad(set_to_none=True)`,
PyTorch's default, a stage's backward creates them and they stay until the
optimizer step: a Meter without parameters counts them like any tensor, and
the chain says how many each backward leaves (g^ℓ). With
`set_to_none=False` they live across steps with the weights: a Meter given
the parameters books each outside the count from the moment autograd
accumulates it into `.grad` (a post-accumulate-grad hook), once per
parameter and step, which is when the tensor in flight is added into the
existing `.grad` and freed.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys

from typing import Any, Callable, Iterable, List, Tuple

import torch
from torch import nn

from .batch import leaves

# A marker allocation the hooks make so that a booking has its place among
# the profiler's events on the CPU (an odd size no tensor of the model has
# in practice; its own bytes are not counted).
_MARK = 999_983
# Another, for the boundaries between a schedule's operations
# (`Meter.measure_ops`).
_OP_MARK = 999_979
# And two around what is booked outside the count (`Meter.outside`).
_OUT_MARK, _IN_MARK = 999_961, 999_959


class Meter:
    """Measures, for a call `fn()`, the net change of live bytes and the
    peak above the level at the start, both with the parameter gradients
    accumulated during the call booked outside."""

    def __init__(self, device: torch.device, params: Iterable[nn.Parameter] = ()) -> None:
        self.device = torch.device(device)
        self.params = [p for p in params if p.requires_grad]

    def measure(self, fn: Callable[[], Any]) -> Tuple[Any, int, int]:
        """(fn's result, net bytes, peak bytes above the start)."""
        result, net, peak, _ = self._measure(lambda boundary: fn())
        return result, net, peak

    @contextlib.contextmanager
    def outside(self):
        """Allocations made inside are not counted (on the CPU: the
        runtime's RNG states, which on a GPU live in host memory). They must
        be freed inside too. On CUDA nothing is needed: a CPU tensor is not
        in the device's count."""
        if self.device.type == "cuda":
            yield
            return
        torch.empty(_OUT_MARK, dtype=torch.uint8)
        try:
            yield
        finally:
            torch.empty(_IN_MARK, dtype=torch.uint8)

    def rehome(self, storages: Iterable[torch.UntypedStorage]) -> None:
        """Gives storages allocated before the measurement new blocks, with
        their bytes kept and outside the count. On the CPU the profiler
        knows a block's size only if it was allocated while a profiler ran
        (PyTorch's CPU allocator keeps a size table only then, and does not
        forget an entry freed outside one): a free of an older block is
        reported not at all, or with the size of whatever stale entry sits
        at its address. A caller's batch offloaded as a^0 is such a block;
        re-allocated here, its free is counted exactly. On CUDA every block
        is counted: nothing to do."""
        if self.device.type == "cuda":
            return
        with self.outside():
            for st in storages:
                n = st.nbytes()
                keep = torch.frombuffer(bytearray(n), dtype=torch.uint8)
                keep.copy_(torch.empty(0, dtype=torch.uint8).set_(st))
                st.resize_(0)
                st.resize_(n)
                torch.empty(0, dtype=torch.uint8).set_(st).copy_(keep)

    def measure_ops(self, fn: Callable[[Callable[[], None]], Any]) -> Tuple[Any, List[Tuple[int, int]]]:
        """`fn(boundary)` calls `boundary()` after each operation: (fn's
        result, per operation (live bytes after it, peak bytes during it),
        both above the start)."""
        result, _, _, ops = self._measure(fn)
        return result, ops

    def _measure(self, fn):
        booked: List[int] = []
        # A `.grad` that exists before the call (a loop that zeroes in place,
        # `set_to_none=False`) was never in the count: autograd adds into
        # it and frees the tensor in flight, a transient the count sees by
        # itself. Only the gradients the call creates are booked outside.
        seen: set = {id(p) for p in self.params if p.grad is not None}
        cuda = self.device.type == "cuda"
        segments: List[int] = []

        def hook(p: torch.Tensor) -> None:
            if id(p) in seen or p.grad is None:
                return
            seen.add(id(p))
            size = p.grad.untyped_storage().nbytes()
            if cuda:
                torch.cuda.synchronize(self.device)
                segments.append(torch.cuda.max_memory_allocated(self.device) - sum(booked))
                booked.append(size)
                torch.cuda.reset_peak_memory_stats(self.device)
            else:
                booked.append(size)
                torch.empty(_MARK, dtype=torch.uint8)

        handles = [p.register_post_accumulate_grad_hook(hook) for p in self.params]
        # The garbage collector, run in the middle, frees whatever cycles
        # are pending: bytes that are not the call's (a negative output
        # size of a CUDA stage, once).
        collecting = gc.isenabled()
        gc.collect()
        gc.disable()
        try:
            if cuda:
                return self._measure_cuda(fn, booked, segments)
            return self._measure_cpu(fn, booked)
        finally:
            if collecting:
                gc.enable()
            for h in handles:
                h.remove()

    def _measure_cuda(self, fn, booked, segments):
        dev = self.device
        torch.cuda.synchronize(dev)
        torch.cuda.reset_peak_memory_stats(dev)
        start = torch.cuda.memory_allocated(dev)
        ops: List[Tuple[int, int]] = []
        overall = [0]

        def boundary() -> None:
            torch.cuda.synchronize(dev)
            segments.append(torch.cuda.max_memory_allocated(dev) - sum(booked))
            peak = max(segments) - start
            overall[0] = max(overall[0], peak)
            ops.append((torch.cuda.memory_allocated(dev) - sum(booked) - start, peak))
            segments.clear()
            torch.cuda.reset_peak_memory_stats(dev)

        result = fn(boundary)
        torch.cuda.synchronize(dev)
        segments.append(torch.cuda.max_memory_allocated(dev) - sum(booked))
        net = torch.cuda.memory_allocated(dev) - sum(booked) - start
        return result, net, max(0, max(segments) - start, overall[0]), ops

    def _measure_cpu(self, fn, booked):
        from torch.profiler import ProfilerActivity, profile

        prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
        with _quiet_stderr():
            prof.__enter__()
        try:
            result = fn(lambda: torch.empty(_OP_MARK, dtype=torch.uint8))
        finally:
            with _quiet_stderr():
                prof.__exit__(None, None, None)
        events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
        # Stable: events of one nanosecond keep the order they were reported in.
        events.sort(key=lambda e: e.start_ns())
        cur = peak = op_peak = 0
        ops: List[Tuple[int, int]] = []
        marks = iter(booked)
        out = False
        for e in events:
            n = e.nbytes()
            if n in (_OUT_MARK, _IN_MARK):
                out = n == _OUT_MARK
                continue
            if out or n in (-_OUT_MARK, -_IN_MARK):
                continue
            if n == _MARK:
                cur -= next(marks, 0)
                continue
            if n == _OP_MARK:
                ops.append((cur, op_peak))
                op_peak = cur
                continue
            if n in (-_MARK, -_OP_MARK):
                continue
            cur += n
            peak = max(peak, cur)
            op_peak = max(op_peak, cur)
        return result, cur, peak, ops


class TrainingState:
    """Parameter gradients, buffers and RNG, saved and put back: describing
    a model, measuring or recording a step leaves it as it was."""

    def __init__(self, params: List[nn.Parameter], buffers: List[torch.Tensor], device) -> None:
        self.params = params
        self.grads = [p.grad for p in params]
        self.buffers = [(b, b.detach().clone()) for b in buffers]
        self.device = device
        self.rng = torch.get_rng_state()
        self.cuda_rng = torch.cuda.get_rng_state(device) if device.type == "cuda" else None

    def reset(self) -> None:
        """Buffers and RNG as saved; parameter gradients none."""
        with torch.no_grad():
            for b, old in self.buffers:
                b.copy_(old)
        for p in self.params:
            p.grad = None
        torch.set_rng_state(self.rng)
        if self.cuda_rng is not None:
            torch.cuda.set_rng_state(self.cuda_rng, self.device)

    def restore(self) -> None:
        self.reset()
        for p, g in zip(self.params, self.grads):
            p.grad = g


@contextlib.contextmanager
def _quiet_stderr():
    """Kineto prints a line to the process's stderr at every profiler start
    and stop (and a GPU probe's failure on a machine without one): noise
    around each measurement, silenced at the file-descriptor level for the
    start and stop only (the model's own code runs outside)."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def storage_bytes(tensors: Iterable[Any]) -> int:
    """The bytes of the distinct storages of `tensors` (non-tensors ignored)."""
    seen = {}
    for t in tensors:
        if isinstance(t, torch.Tensor):
            st = t.untyped_storage()
            seen[st._cdata] = st.nbytes()
    return sum(seen.values())
