"""The numeric GRAPH_* settings a run reads from its environment. Each is read where it is used,
through these functions, so that a value that is not a number fails with one line naming the
variable (int() would name only the text); set but empty, a variable means its default, as
`VAR=` in a job's environment says. The command line checks them all before it imports
Prefect (check_environment); this module imports nothing heavy for that reason."""
from __future__ import annotations

import math
import os

from tasks.errors import InputError

# Whole-number settings and their least value.
WHOLE_NUMBERS = {
    "GRAPH_DASK_MIN_EDGES": 0,  # flows/runner_choice.py: the edges from which `auto` runs on Dask
    "GRAPH_DASK_WORKERS": 1,  # tasks/cluster.py: worker processes of a CPU cluster of this machine
    "GRAPH_PROGRESS_MIN_EDGES": 0,  # tasks/artifacts.py (Progress): the edges from which progress bars are published
    "GRAPH_HOST_MEMORY_LIMIT": 1,  # tasks/memory.py: bytes a NumPy run may take (default: what is available)
}
# Durations in seconds, finite and above zero.
SECONDS = (
    "GRAPH_FLOW_TIMEOUT_SECONDS",  # flows/common.py: a run's time limit
    "GRAPH_COMM_TIMEOUT",  # tasks/partitioned/comm_tcp.py: how long a partitioned run's rank waits for a silent peer
    "GRAPH_PROGRESS_AFTER_SECONDS",  # flows/progress.py: how long a command's run is quiet before its stage lines
)


def _text(name: str) -> str:
    return os.environ.get(name, "").strip()


def whole_number(name: str, default: int) -> int:
    text = _text(name)
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = None
    least = WHOLE_NUMBERS[name]
    if value is None or value < least:
        raise InputError(f"{name}={text}: expected a whole number >= {least}; leave it unset for the default")
    return value


def seconds(name: str, default: float) -> float:
    assert name in SECONDS, name
    text = _text(name)
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise InputError(f"{name}={text}: expected a number of seconds above 0; leave it unset for the default")
    return value


def check_environment() -> None:
    """Raise InputError for the first numeric setting whose value is unusable."""
    for name in WHOLE_NUMBERS:
        whole_number(name, 0)
    for name in SECONDS:
        seconds(name, 1.0)
