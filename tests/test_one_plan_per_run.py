"""One plan per run: a run walks its input once and reads each file's footer once, whatever
asks about the input (the command line's `auto` runner choice, the memory check, the output
check, the reader, the partition count, every rank of a partitioned run). Counted by wrapping
the real functions, the files still read: the walk (tasks.parquet.dataset.discovery.dataset_files)
and every pyarrow footer read (a ParquetFile opened without the footer it already has, and
pyarrow.parquet.read_metadata / read_schema), in this process and, for a partitioned run, on
the Dask workers. The plan pickles to the workers (pyarrow's FileMetaData included) and keeps
each file's identity, so a file replaced after planning is still refused."""
from collections import Counter
from pathlib import Path

import cloudpickle
import pyarrow.parquet as pq
import pytest
from distributed.diagnostics.plugin import WorkerPlugin

from flows import mst as mst_cli
from flows.pipeline import pipeline_flow
from tasks.errors import InputError, OutputError
from tasks.parquet.dataset import discovery, plan as plan_module
from tasks.parquet.dataset.plan import plan_input
from tasks.parquet.read.reader import read_edges
from tests.helpers import run, write_edges

pytestmark = pytest.mark.usefixtures("prefect_server")


class Counts:
    """Walks and footer reads (by file name) of the input below ``root`` made in this process
    while installed (a partitioned run's ranks also read the footers of the parts they join)."""

    def __init__(self, root: Path):
        self.root, self.walks, self.footers = str(root), 0, Counter()

    def count(self, source) -> None:
        if str(source).startswith(self.root):
            self.footers[Path(str(source)).name] += 1

    def install(self, patch) -> "Counts":
        """``patch(owner, name, value)``: monkeypatch.setattr, or plain setattr on a worker."""
        walk, opened, read_metadata, read_schema = (discovery.dataset_files, pq.ParquetFile.__init__,
                                                    pq.read_metadata, pq.read_schema)

        def counted_walk(*args, **kwargs):
            self.walks += 1
            return walk(*args, **kwargs)

        def counted_open(parquet, source, *args, metadata=None, **kwargs):
            if metadata is None:  # with the footer given, pyarrow reads none
                self.count(source)
            return opened(parquet, source, *args, metadata=metadata, **kwargs)

        def counted_read(read):
            def wrapped(where, *args, **kwargs):
                self.count(where)
                return read(where, *args, **kwargs)
            return wrapped

        patch(discovery, "dataset_files", counted_walk)
        patch(plan_module, "dataset_files", counted_walk)  # (imported by name)
        patch(pq.ParquetFile, "__init__", counted_open)
        patch(pq, "read_metadata", counted_read(read_metadata))
        patch(pq, "read_schema", counted_read(read_schema))
        return self


class CountOnWorkers(WorkerPlugin):
    """The same counts in each Dask worker process (read with ``worker_counts``)."""

    name = "count-plans"

    def __init__(self, root: Path):
        self.root = root

    def setup(self, worker):
        self.counts = Counts(self.root).install(setattr)


def worker_counts(dask_worker) -> tuple[int, dict]:
    counts = dask_worker.plugins[CountOnWorkers.name].counts
    return counts.walks, dict(counts.footers)


def edge_dataset(root: Path) -> list[str]:
    """Three edge files of one connected graph (and a README, looked at and skipped)."""
    write_edges(root / "part-0.parquet", [0, 1, 2], [1, 2, 3], [1.0, 2.0, 3.0], row_group_size=2)
    write_edges(root / "part-1.parquet", [3, 4], [4, 5], [0.5, 1.5])
    write_edges(root / "part-2.parquet", [5, 0], [0, 3], [4.0, 0.25])
    (root / "README.md").write_text("edges of a test graph\n")
    return ["part-0.parquet", "part-1.parquet", "part-2.parquet"]


def assert_once(counts: Counts, files: list[str]) -> None:
    assert counts.walks == 1
    assert counts.footers == Counter({f: 1 for f in files}), counts.footers


def test_a_command_line_run_plans_once_for_the_runner_choice_and_the_run(tmp_path, monkeypatch, capsys):
    """`--runner auto` counts the edges from the plan, and the flow run takes that plan."""
    files = edge_dataset(tmp_path / "edges")
    counts = Counts(tmp_path / "edges").install(monkeypatch.setattr)
    code, out, err = run(mst_cli.main, [tmp_path / "edges", "--output", tmp_path / "out", "--runner", "auto"], capsys)
    assert code == 0, err
    assert (tmp_path / "out" / "mst_edges.parquet").exists()
    assert_once(counts, files)


def test_a_flow_called_with_a_path_plans_once(tmp_path, monkeypatch):
    """From Python (or a deployment): the flow makes the plan, with a filter's row masks in it."""
    files = edge_dataset(tmp_path / "edges")
    counts = Counts(tmp_path / "edges").install(monkeypatch.setattr)
    summary = pipeline_flow(str(tmp_path / "edges"), source=[0], output=str(tmp_path / "out"))
    assert summary["edges"] == 7 and summary["forest_edges"] == 5
    assert_once(counts, files)
    counts = Counts(tmp_path / "edges").install(monkeypatch.setattr)
    summary = pipeline_flow(str(tmp_path / "edges"), source=[0], output=str(tmp_path / "filtered"),
                            filter="weight < 4")
    assert summary["edges"] == 6
    assert_once(counts, files)
    counts = Counts(tmp_path / "edges").install(monkeypatch.setattr)
    summary = pipeline_flow(str(tmp_path / "edges"), source=[0], output=str(tmp_path / "auto"), partitions="auto")
    assert summary["edges"] == 7  # (auto keeps one partition on the CPU: the partition count asked the plan)
    assert_once(counts, files)


def test_the_output_check_sees_the_folders_a_filter_kept_out(tmp_path):
    """The output check asks the plan's walk: a folder the filter did not enter is still one a
    later run without the filter reads, so results are not written there."""
    from flows.mst import mst_flow

    write_edges(tmp_path / "edges" / "day=1" / "part-0.parquet", [0, 1], [1, 2], [1.0, 2.0])
    write_edges(tmp_path / "edges" / "day=2" / "part-0.parquet", [2, 3], [3, 0], [1.0, 2.0])
    with pytest.raises(OutputError, match="output folder is inside the input dataset"):
        mst_flow(str(tmp_path / "edges"), output=str(tmp_path / "edges" / "day=2" / "out"), filter="day = 1")


def test_a_partitioned_flow_run_plans_once_and_its_ranks_read_through_the_plan(client, tmp_path, monkeypatch):
    """partitions=2 on a running cluster: the flow plans; the partition count, the driver and
    both ranks, on the workers, read through that plan."""
    from flows.mst import mst_flow
    from flows.runners import task_runner

    files = edge_dataset(tmp_path / "edges")
    client.register_plugin(CountOnWorkers(tmp_path / "edges"), name=CountOnWorkers.name)
    try:
        counts = Counts(tmp_path / "edges").install(monkeypatch.setattr)
        flow = mst_flow.with_options(task_runner=task_runner(address=client.scheduler.address))
        summary = flow(str(tmp_path / "edges"), output=str(tmp_path / "out"), partitions=2)
        assert summary["partitions"] == 2 and summary["forest_edges"] == 5
        assert_once(counts, files)
        on_workers = client.run(worker_counts)
        assert all(found == (0, {}) for found in on_workers.values()), on_workers
    finally:
        client.unregister_worker_plugin(CountOnWorkers.name)


def test_the_plan_pickles_and_still_refuses_a_file_replaced_after_planning(tmp_path):
    """What a Dask worker gets: the footers (FileMetaData), the filter's row masks and each
    file's identity as planned; a file replaced since is refused, not read through an old
    footer."""
    files = edge_dataset(tmp_path / "edges")
    plan = plan_input(str(tmp_path / "edges"), filter="weight < 4")
    copy = cloudpickle.loads(cloudpickle.dumps(plan))
    assert [u.identity for u in copy.footers.units] == [u.identity for u in plan.footers.units]
    assert all(a.metadata.equals(b.metadata) for a, b in zip(copy.footers.units, plan.footers.units))
    assert sorted(read_edges(copy).weight.tolist()) == [0.25, 0.5, 1.0, 1.5, 2.0, 3.0]
    assert [p.name for p in copy.dataset.files] == files and copy.filter == "weight < 4"
    write_edges(tmp_path / "next.parquet", [7, 8], [8, 9], [1.0, 1.0])
    (tmp_path / "next.parquet").replace(tmp_path / "edges" / "part-1.parquet")  # an upstream job's next version
    with pytest.raises(InputError, match="part-1.parquet: changed while the run read it"):
        read_edges(copy)
