"""remat_torch: describe any PyTorch model as a Remat chain, and run its
training step exactly as a Remat schedule (`remat-schedule/1`) says.

    chain = remat_torch.describe_chain(model, batch, target, loss=fn)
    plan = remat_torch.solve(chain, "rotor", budget="60%")  # in this process
    step = remat_torch.checkpointed(model, plan, loss=fn)
    loss = step(batch, target)  # forward + backward; parameters' .grad filled

See docs/pytorch.md in the Remat repository for the semantics of each
operation, RNG and BatchNorm handling, offloading and the limitations.
"""

import re as _re
import warnings as _warnings

import torch as _torch

from .batch import BatchMismatch
from .chain import describe_chain
from .export import ExportError, apply_plan, export_plan
from .frozen import FrozenStateError
from .fsdp import fsdp_budget, fsdp_reserve
from .measure import Meter
from .probes import host_bandwidth, plain_step_peak
from .planning import algorithms, solve
from .pipeline import PipelineError, PipelinePlans, describe_pipeline, plan_pipeline
from .policies import POLICIES
from .runtime import Checkpointed, checkpointed
from .schedule import Op, Schedule, ScheduleError, load_schedule, parse_schedule, validate
from .staging import StagingError, find_stages
from .variants import describe_variants, fastest, run_arguments

__all__ = [
    "BatchMismatch",
    "Checkpointed",
    "FrozenStateError",
    "Meter",
    "Op",
    "POLICIES",
    "PipelineError",
    "PipelinePlans",
    "Schedule",
    "algorithms",
    "ScheduleError",
    "StagingError",
    "checkpointed",
    "describe_chain",
    "describe_pipeline",
    "describe_variants",
    "fastest",
    "find_stages",
    "fsdp_budget",
    "fsdp_reserve",
    "host_bandwidth",
    "plain_step_peak",
    "plan_pipeline",
    "run_arguments",
    "load_schedule",
    "parse_schedule",
    "solve",
    "validate",
]
__version__ = "0.1.0"

# The torch versions remat_torch is tested on: 2.11, the oldest (a part of
# the suite: scripts/setup-torch-oldest.sh), to 2.13 (all of it). Older
# ones are not tested: a warning, not a refusal.
OLDEST_TORCH = (2, 11)


def older_than_supported(version: str) -> bool:
    """Whether a torch `version` string ("2.9.1+cu128", "2.13.0a0+git…")
    is older than OLDEST_TORCH; False for one it cannot read."""
    m = _re.match(r"(\d+)\.(\d+)", version)
    return m is not None and (int(m.group(1)), int(m.group(2))) < OLDEST_TORCH


if older_than_supported(_torch.__version__):
    _warnings.warn(f"remat_torch is tested on torch 2.11 to 2.13; this is torch {_torch.__version__}", stacklevel=2)
