"""ppverify: prove pipeline-parallel training schedules correct, bound how fast they can run, and
rank them once communication is modeled.

Example:
    >>> from ppverify import build, run
    >>> run(build("1f1b", p=4, m=8), semantics="slot").makespan
    22.0
"""

from .costs import CostModel
from .engines import run
from .ops import Op
from .placement import Placement
from .schedule import Schedule
from .schedules import build, families, get_family
from .timeline import Timeline

__all__ = ["CostModel", "Op", "Placement", "Schedule", "Timeline", "build", "families", "get_family", "run"]
__version__ = "0.1.0"
