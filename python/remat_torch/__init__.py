"""remat_torch: run one training step of a chain of PyTorch modules exactly
as a Remat schedule (`remat-schedule/1`) says.

    step = remat_torch.checkpointed(stages, "schedule.json")
    loss = step(x, target)      # forward + backward; parameters' .grad filled

See docs/pytorch.md in the Remat repository for the semantics of each
operation, RNG and BatchNorm handling, offloading and the limitations.
"""

from .chain import describe_chain
from .runtime import Checkpointed, checkpointed
from .schedule import Op, Schedule, ScheduleError, load_schedule, parse_schedule, validate

__all__ = [
    "Checkpointed",
    "Op",
    "Schedule",
    "ScheduleError",
    "checkpointed",
    "describe_chain",
    "load_schedule",
    "parse_schedule",
    "validate",
]
__version__ = "0.1.0"
