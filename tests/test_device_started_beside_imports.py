"""The command line starts a GPU run's device (CuPy, its context and pool, the project's CUDA
module) on a thread while it imports Prefect and the flow, only where this process runs the
tasks on CuPy: not for Dask, several partitions or NumPy. On a machine without a GPU the thread
ends at once, having loaded nothing; on a GPU it leaves the module loaded for the first task."""
import subprocess
import sys

import pytest

from flows.device_start import start_early
from kernels import backend as be
from tasks.parquet.dataset.plan import plan_input
from tests.conftest import ROOT

SAMPLE = ROOT / "data" / "graph.parquet"


@pytest.mark.parametrize("backend, runner, partitions", [
    (None, "dask", 1),  # the workers own the devices
    ("cupy", "dask", 1),
    (None, "threads", 2),  # several partitions run on Dask workers
    (None, "auto", "auto"),  # "auto" partitions may come to several
    ("numpy", "threads", 1),
    ("numpy", "auto", 1),
])
def test_no_device_start_where_this_process_runs_no_gpu_tasks(backend, runner, partitions):
    assert start_early(backend, runner, partitions, plan_input(SAMPLE)) is None


@pytest.mark.parametrize("runner", ["threads", "auto"])
def test_the_device_start_ends_and_leaves_the_module_to_a_gpu_run_only(runner):
    thread = start_early(None, runner, 1, plan_input(SAMPLE))
    assert thread is not None and thread.daemon and thread.name == "device-start"
    thread.join(timeout=120)
    assert not thread.is_alive()
    if be.resolve(None) == "cupy":
        from kernels import gpu

        assert gpu._module is not None  # loaded by the thread, for the run's first kernel
    else:
        assert "kernels.gpu" not in sys.modules  # imported only where arrays live on a GPU


def test_the_device_start_imports_no_prefect_module_beside_the_commands_own_import():
    """The thread decides the `auto` runner (flows.runner_choice) while the main thread imports
    Prefect; a Prefect module imported by both threads at once can be met half-initialized
    ("cannot import name ... from partially initialized module", seen on a GPU machine when the
    thread imported flows.runners). Everything the thread imports, in a fresh interpreter."""
    code = ("import importlib.util, sys\nimport flows.device_start, flows.runner_choice, kernels.backend, tasks.cluster\n"
            "if importlib.util.find_spec('cupy'):\n    import kernels.gpu\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'prefect'))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
