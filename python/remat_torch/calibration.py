"""The chain's times as a whole training step reads them (issue 42).

`describe_chain` times each stage alone: F_all^ℓ, F_∅^ℓ and B^ℓ of one
stage, its input ready. A whole step reads more: on this project's 2-core
CPU a ViT's stages summed to 169 ms where its plain step took 181 ms (a
stage alone finds its weights and input in cache; a step's stages evict
each other, and autograd's engine runs between them), and the wrapper
adds its own work to every operation it interprets (17–25 µs on tiny
stages; its store-all step 184 ms). Predictions from the stage-alone
times alone were 7–9 % under the step a user measures.

So `describe_chain` also times two whole steps, interleaved, `repeat`
rounds after a warm-up of the wrapper's, and folds their medians into the
stages' times:

* P, the user's plain step: `loss(model(batch), target).backward()`
  (a list of stages run one after the other without a model);
* W, the wrapper's store-all step: `checkpointed` running F_all^1 … F_all^L,
  B^L … B^1, which runs the same kernels as P plus the wrapper's work.

With Σ the stages' summed F_all and B times:

* every time of every stage (F_all, F_∅, B, a menu option's extra) is
  scaled by s = P / Σ: what a stage costs inside a step;
* c = max(0, W − P) / L is added to each forward, F_all and F_∅ alike:
  the wrapper's work per forward it runs. Its backwards are not charged:
  run back to back they are one call of autograd's engine, as in a plain
  step (`checkpointed`'s `join_backwards`).

The chain's store-all step is then max(P, W) exactly (s·Σ + L·c), and a
plan that recomputes pays each extra forward's s·u_f + c. Over compiled
stages no plain step runs the same graphs: s = W / Σ and c = 0.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable, Dict, List, Optional

import torch

from .schedule import FORMAT, parse_schedule


def store_all(n: int) -> Dict[str, Any]:
    """The store-all schedule of n stages as a remat-schedule/1 document."""
    ops = [{"op": "forward_all", "stage": l} for l in range(1, n + 1)]
    ops += [{"op": "backward", "stage": l} for l in range(n, 0, -1)]
    return {"format": FORMAT, "algorithm": "store-all", "stages": n, "ops": ops}


def factors(stage_sum: float, plain: Optional[float], wrapper: float, n: int) -> Dict[str, float]:
    """s and c (module doc) from the stages' summed F_all and B times, the
    plain step's median (None over compiled stages) and the wrapper's."""
    if stage_sum <= 0 or n < 1:
        return {"scale": 1.0, "per_forward_seconds": 0.0}
    if plain is None:
        return {"scale": wrapper / stage_sum, "per_forward_seconds": 0.0}
    return {"scale": plain / stage_sum, "per_forward_seconds": max(0.0, wrapper - plain) / n}


def apply(stages: List[Dict[str, Any]], scale: float, per_forward_seconds: float) -> None:
    """Folds s and c into `stages` (the chain's stage dicts) in place."""
    for st in stages:
        st["forward_seconds"] = scale * st["forward_seconds"] + per_forward_seconds
        st["forward_nograd_seconds"] = scale * st["forward_nograd_seconds"] + per_forward_seconds
        st["backward_seconds"] = scale * st["backward_seconds"]
        for entry in st.get("menu", ()):
            entry["backward_extra_seconds"] = scale * entry["backward_extra_seconds"]


def sync(device: torch.device) -> None:
    """Waits for the device's queued work (CUDA), so a timer reads it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def interleaved(steps: List[Callable[[], None]], reset: Callable[[], None], sync: Callable[[], None],
                repeat: int, report: Callable[[str, int, int], None] = lambda *_: None,
                warm: int = -1) -> List[float]:
    """Medians of `repeat` rounds, each step once per round in turn, after
    one warm-up round of the first `warm` steps (all when negative); `reset`
    before each step puts the gradients, buffers and RNG back, so that
    every step starts as the first."""
    times: List[List[float]] = [[] for _ in steps]
    warmed = steps if warm < 0 else steps[:warm]
    for r in range(repeat + 1):
        report("whole steps", r, repeat + 1)
        for i, step in enumerate(warmed if r == 0 else steps):
            reset()
            sync()
            t0 = time.perf_counter()
            step()
            sync()
            if r:  # the first round warms up
                times[i].append(time.perf_counter() - t0)
    reset()
    return [statistics.median(t) for t in times]


def whole_steps(plain: Optional[Callable[[], None]], wrapper: Callable[[], None], reset: Callable[[], None],
                sync: Callable[[], None], repeat: int,
                report: Callable[[str, int, int], None]) -> Dict[str, Optional[float]]:
    """Medians of `repeat` interleaved rounds of the two steps
    (`interleaved`), after one warm-up of the wrapper's only (its first
    step checks and captures; the model's own step ran warm while the
    stages were checked and timed)."""
    steps = [wrapper] + ([plain] if plain is not None else [])
    medians = interleaved(steps, reset, sync, repeat, report, warm=1)
    return {"wrapper": medians[0], "plain": medians[1] if plain is not None else None}


def plain_step(program, loss: Optional[Callable], batch, target) -> Callable[[], None]:
    """The user's own step: the model's forward and loss, or the stages one
    after the other (a list of stages, the last returning the loss), then
    `backward()`."""
    from .staging import StagedProgram, model_loss

    if isinstance(program, StagedProgram) and loss is not None:
        model = program.staged.model

        def run() -> None:
            model_loss(model, loss, batch, target).backward()
        return run

    def run_stages() -> None:
        consts = program.constants(batch, target)
        h = program.first_input(batch)
        for l in range(1, len(program) + 1):
            h = program.run(l, h, consts)
        h.backward()
    return run_stages


def wrapper_step(model, program, loss, batch, target, compile_budget) -> Callable[[], None]:
    """The wrapper's store-all step over `program` (the stages already
    found and, over compiled stages, compiled: nothing is found again)."""
    from .runtime import Checkpointed

    step = Checkpointed(model, parse_schedule(store_all(len(program))), loss=loss,
                        compile=False if compile_budget is None else compile_budget)
    step.adopt(program, batch, target)
    step.record_states = False

    def run() -> None:
        step(batch, target)
    return run


def source_words(f: Dict[str, float], plain: Optional[float], wrapper: float, repeat: int) -> str:
    """What the chain's `source` says of the calibration."""
    p = "" if plain is None else f"plain step {1000 * plain:.2f} ms, "
    return (f"stage times calibrated to whole steps (medians of {repeat} interleaved: {p}the wrapper's "
            f"store-all {1000 * wrapper:.2f} ms): scaled by {f['scale']:.4f}, "
            f"+{1e6 * f['per_forward_seconds']:.1f} µs per forward for the wrapper")
