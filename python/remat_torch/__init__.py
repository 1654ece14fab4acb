"""remat_torch: describe any PyTorch model as a Remat chain, and run its
training step exactly as a Remat schedule (`remat-schedule/1`) says.

    chain = remat_torch.describe_chain(model, batch, target, loss=fn)
    plan = remat_torch.solve(chain, "rotor", budget="60%")  # in this process
    step = remat_torch.checkpointed(model, plan, loss=fn)
    loss = step(batch, target)  # forward + backward; parameters' .grad filled

See docs/pytorch.md in the Remat repository for the semantics of each
operation, RNG and BatchNorm handling, offloading and the limitations.
"""

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
    "find_stages",
    "fsdp_budget",
    "fsdp_reserve",
    "host_bandwidth",
    "plain_step_peak",
    "plan_pipeline",
    "load_schedule",
    "parse_schedule",
    "solve",
    "validate",
]
__version__ = "0.1.0"
