"""One Remat plan per pipeline rank, for `torch.distributed.pipelining`.

A pipeline cuts the model into p stage modules, one per rank, and the
batch into m micro-batches. Under 1F1B rank r holds up to min(p − r, m)
micro-batches between their forward and their backward, so rank 0 needs
the most memory and the last rank the least (docs/pytorch.md, "Pipelines").
Remat plans each rank for its own micro-batches in flight
(`remat pipeline`, docs/cli.md):

    stages = [First(model), Last(model)]                       # the user's stage modules
    chain, split = remat_torch.describe_pipeline(stages, micro_batch, target, loss=loss_fn)
    budgets = remat_torch.pipeline.rank_budgets(stages, device_memory=80 << 30)   # or one int for all
    plans = remat_torch.plan_pipeline(chain, split, microbatches=8, budget=budgets)
    # on rank r, before PipelineStage(stages[r], r, p, device):
    plans.apply(r, stages[r], plans.example_input(stages, micro_batch, r))

`describe_pipeline` describes the stage modules run one after the other
(`nn.Sequential(*stages)`, the loss after the last) as one chain, so every
rank's numbers come from one measurement; a Remat stage may not straddle
two ranks. `PipelinePlans.apply` lowers rank r's schedule to stock
`torch.utils.checkpoint` regions on its stage module (`apply_plan`), which
`PipelineStage` then runs like any module: the plan needs nothing of the
pipeline's own code. Under `ScheduleInterleaved1F1B` give the p·v stage
modules in PyTorch's stage order and `chunks=v`; each rank applies the
plans of its modules r, r + p, … (docs/pytorch.md, "Pipelines").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import torch
from torch import nn

from .chain import describe_chain
from .export import Applied, ExportError, apply_plan, export_plan


class PipelineError(ValueError):
    """The stage modules or the pipeline cannot be planned; the message
    names the argument."""


def describe_pipeline(stages: Sequence[nn.Module], batch: Any, target: Any = None, *,
                      loss: Callable, **describe: Any) -> "tuple[dict, List[int]]":
    """The chain of `stages` run one after the other on one micro-batch
    (`describe_chain` of `nn.Sequential(*stages)` with `loss`; `describe`
    goes to it), and how many of its stages each rank holds. The chain's
    module names start with the rank (`0.h.1`); `plan_pipeline` gives each
    rank its own names back.

    The parameter gradients are outside the chain (`set_to_none=False`
    unless `describe` says otherwise): a rank's are created by its first
    micro-batch's backward and summed into by the others, which the
    per-micro-batch plan cannot place (`remat pipeline` leaves them out of
    the ranks' peaks); count them with each rank's fixed memory."""
    if len(stages) < 1:
        raise PipelineError("stages: give at least one stage module")
    whole = nn.Sequential(*stages)
    describe.setdefault("set_to_none", False)
    chain = describe_chain(whole, batch, target, loss=loss, **describe)
    return chain, split_of(chain, len(stages))


def _ranks_of(module: Optional[str]) -> List[int]:
    """The ranks a stage's `module` (`0.h.1`, `1.ln_f+1.lm_head`) names."""
    if not module:
        return []
    return sorted({int(part.split(".", 1)[0]) for part in module.split("+") if part.split(".", 1)[0].isdigit()})


def split_of(chain: dict, ranks: int) -> List[int]:
    """Stages per rank of a chain described by `describe_pipeline`."""
    split = [0] * ranks
    last = 0
    for i, stage in enumerate(chain["stages"], start=1):
        owners = _ranks_of(stage.get("module"))
        if len(owners) > 1:
            raise PipelineError(
                f"stages: Remat's stage {i} ({stage.get('module')}) runs modules of ranks "
                f"{' and '.join(map(str, owners))}; a stage cannot be cut between ranks: move the "
                "boundary between stage modules to a block boundary")
        roots = [part for part in (stage.get("module") or "").split("+") if part.isdigit()]
        if roots:
            raise PipelineError(
                f"stages: Remat's stage {i} runs code of rank {roots[0]}'s stage module itself (module "
                f"{stage.get('module')!r}), outside its submodules, so no plan could wrap it: move that "
                "code (an embedding sum, a norm, a head) into a submodule of the stage module")
        rank = owners[0] if owners else last
        if rank < last:
            raise PipelineError(f"stages: stage {i} ({stage.get('module')}) belongs to rank {rank} "
                                f"after a stage of rank {last}")
        last = rank
        split[rank] += 1
    empty = [r for r, n in enumerate(split) if n == 0]
    if empty:
        raise PipelineError(f"stages: rank {empty[0]}'s module holds no stage Remat found; "
                            "give it at least one block")
    return split


def _own_names(module: Optional[str], rank: int) -> Optional[str]:
    """`0.h.1+0.ln` → `h.1+ln`: a name inside rank `rank`'s own module."""
    if module is None:
        return None
    prefix = f"{rank}."
    return "+".join(p[len(prefix):] if p.startswith(prefix) else p for p in module.split("+"))


@dataclass
class RankPlan:
    rank: int
    chain: dict
    """The rank's piece of the chain, module names inside its stage module."""
    schedule: Optional[dict]
    """Its remat-schedule/1 (stages numbered from 1); None when none fits."""
    report: dict
    """`remat pipeline --json`'s entry for the rank: in_flight, budget_bytes,
    judged (peak_bytes: the rank's predicted peak with its micro-batches in
    flight), cost (per micro-batch), lower_bound_seconds, search."""
    chunk: int = 0
    """Which of the rank's chunks (0 but under an interleaved schedule,
    where this plan is for piece chunk·p + rank)."""


@dataclass
class PipelinePlans:
    split: List[int]
    microbatches: int
    schedule: str
    ranks: List[RankPlan]
    """One plan per stage module, in the pipeline's order: per rank, or
    under an interleaved schedule per piece (PyTorch's stage index k, on
    rank k mod p)."""
    report: dict = field(repr=False)
    """The whole `remat pipeline --json` report (`uniform` with
    `compare_uniform`; `orders`, each rank's order of phases)."""
    chunks: int = 1

    def apply(self, rank: int, module: nn.Module, example_input: Any, remat: Optional[str] = None) -> Applied:
        """Applies stage module `rank`'s plan to it in place (stock
        `torch.utils.checkpoint` regions, `apply_plan`): the rank's, or
        under an interleaved schedule piece `rank`'s (PyTorch's stage
        index: call it for each of the rank's pieces). `example_input` is
        what the module receives for one micro-batch, or any tensor of that
        shape and dtype (`torch.empty(...)` on a rank that holds only its
        own module): one forward without grad shows how the module calls
        its stages, and its values are not used otherwise. Returns
        `Applied` (`remove()` undoes it). A rank with no plan that fits
        raises."""
        r = self.ranks[rank]
        if r.schedule is None:
            raise PipelineError(f"budget: no schedule fits rank {r.rank} with its {r.report['in_flight']} "
                                "micro-batches in flight")
        plan = export_plan(r.schedule, r.chain, remat=remat, model=module)
        # Every stage module but the last hands its last stage's output on:
        # a plan may recompute that stage too (checkpoint around its last
        # block); the last module's last stage holds the loss.
        return apply_plan(module, plan, example_input, last_stage_in_model=rank != len(self.ranks) - 1)

    @staticmethod
    def example_input(stages: Sequence[nn.Module], batch: Any, rank: int) -> Any:
        """What stage module `rank` receives for `batch`: the earlier
        stages run on it without grad (RNG restored)."""
        x = batch
        state = torch.random.get_rng_state()
        try:
            with torch.no_grad():
                for m in stages[:rank]:
                    x = m(**x) if isinstance(x, dict) else m(x)
        finally:
            torch.random.set_rng_state(state)
        return x


def _binary(remat: Optional[str]) -> str:
    binary = remat or os.environ.get("REMAT_BIN") or shutil.which("remat")
    if not binary:
        raise ExportError("no remat binary: pass remat=PATH, set $REMAT_BIN, or put remat on the PATH")
    return binary


def rank_budgets(stages: Sequence[nn.Module], device_memory: int, optimizer_states: int = 2,
                 margin: float = 0.01) -> List[int]:
    """Each rank's activation budget on a device of `device_memory` bytes:
    what its stage module's weights, their gradients and `optimizer_states`
    tensors per weight (Adam: 2; SGD with momentum: 1; plain SGD: 0) leave,
    less `margin` of the device (1 %, `remat maxbatch`'s default). Ranks
    hold different weights (the embeddings on the first, the head on the
    last), so their budgets differ; a weight two ranks share (tied
    embeddings) is held by both."""
    if not isinstance(device_memory, int) or isinstance(device_memory, bool) or device_memory <= 0:
        raise PipelineError(f"device_memory: expected bytes (an int > 0), got {device_memory!r}")
    if not isinstance(optimizer_states, int) or optimizer_states < 0:
        raise PipelineError(f"optimizer_states: expected a whole number ≥ 0, got {optimizer_states!r}")
    if not 0 <= margin < 1:
        raise PipelineError(f"margin: expected a share of the device in [0, 1), got {margin!r}")
    out = []
    for r, m in enumerate(stages):
        weights = sum(p.numel() * p.element_size() for p in m.parameters())
        left = device_memory - (2 + optimizer_states) * weights - int(device_memory * margin)
        if left <= 0:
            raise PipelineError(f"device_memory: rank {r}'s weights, gradients and optimizer state "
                                f"({(2 + optimizer_states) * weights} B) leave nothing for activations")
        out.append(left)
    return out


def plan_pipeline(chain: Union[dict, str, Path], split: Sequence[int], microbatches: int,
                  budget: Union[int, Sequence[int]], schedule: str = "1f1b", *,
                  chunks: int = 1, compare_uniform: bool = False, link: Optional[float] = None,
                  remat: Optional[str] = None) -> PipelinePlans:
    """Runs `remat pipeline` on `chain` (a dict or a file; its stages
    measured at the micro-batch size) cut by `split`, with `microbatches`
    per step under `schedule` (`1f1b`, `gpipe`, or `interleaved-1f1b` with
    `chunks` stage modules per rank: then `split` has one entry per stage
    module, PyTorch's stage index k on rank k mod p) and `budget` bytes of
    activations per rank (one for all, or one per rank: `rank_budgets`
    gives them from the device's memory), and returns each stage module's
    plan. `link`, bytes per second between two ranks, counts the sends in
    the step time (`report["per_rank"]["makespan_seconds"]`; the plans do
    not change). Errors of the binary (a split that does not add up, a budget
    list of another length, micro-batches the interleaved schedule
    refuses) raise PipelineError with its message."""
    if isinstance(chain, (str, Path)):
        chain = json.loads(Path(chain).read_text())
    budgets = [budget] if isinstance(budget, int) else list(budget)
    if not budgets or any(not isinstance(b, int) or isinstance(b, bool) or b < 0 for b in budgets):
        raise PipelineError(f"budget: expected bytes (an int ≥ 0) or one per rank, got {budget!r}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "chain.json"
        path.write_text(json.dumps(chain))
        args = [_binary(remat), "pipeline", str(path), "--split", ",".join(map(str, split)),
                "--microbatches", str(microbatches), "--schedule", schedule,
                "--budget", ",".join(map(str, budgets)), "--chunks", str(chunks), "--json", "--output", tmp]
        if compare_uniform:
            args.append("--compare-uniform")
        if link is not None:
            args += ["--link", repr(float(link))]
        p = subprocess.run(args, capture_output=True, text=True)
        if p.returncode != 0:
            raise PipelineError(p.stderr.strip().removeprefix("error: "))
        report = json.loads(p.stdout)
        ranks = []
        p_ranks = len(split) // max(chunks, 1)
        # One entry per stage module, in the pipeline's order (the binary
        # lists them so): module k of `describe_pipeline`'s chain.
        for k, r in enumerate(report["per_rank"]["ranks"]):
            name = f"rank{r['rank']}.chunk{r['chunk']}" if chunks > 1 else f"rank{r['rank']}"
            assert r["chunk"] * p_ranks + r["rank"] == k, (k, r["rank"], r["chunk"])
            piece = json.loads((Path(tmp) / f"{name}.chain.json").read_text())
            for stage in piece["stages"]:
                if "module" in stage:
                    stage["module"] = _own_names(stage["module"], k)
            sched_path = Path(tmp) / f"{name}.schedule.json"
            sched = json.loads(sched_path.read_text()) if sched_path.exists() else None
            ranks.append(RankPlan(rank=r["rank"], chain=piece, schedule=sched, report=r, chunk=r["chunk"]))
    return PipelinePlans(split=list(split), microbatches=microbatches, schedule=schedule, ranks=ranks,
                         report=report, chunks=chunks)
