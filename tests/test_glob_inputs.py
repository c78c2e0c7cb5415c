"""A glob pattern as INPUT (`python -m flows.mst 'data/parts/*.parquet'`, `**` for any folders)
reads the matched files as one dataset, in sorted order, by the dataset rule: names starting with
_ or . skipped, other files that are not Parquet skipped (and named), a Parquet file under another
name refused. No match is one line, "no file matches PATTERN", before Prefect is imported. A
bucket's pattern (s3://graphs/prefix/*.parquet) goes through the store's filesystem. The walk
is still made once per run (tests/test_one_plan_per_run.py counts it)."""
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows import mst as mst_cli
from tasks.parquet.dataset import discovery
from tests.conftest import ROOT
from tests.helpers import error_line, run, upload, write_edges
from tests.references import assert_forest

pytestmark = pytest.mark.usefixtures("prefect_server")

# three files of one edge list, split so the forest's rows depend on their order
PIECES = {"b.parquet": ([2, 3], [3, 0], [1.0, 1.0]), "a.parquet": ([0, 1], [1, 2], [1.0, 1.0]),
          "sub/c.parquet": ([0, 4], [2, 0], [1.0, 2.0])}


def parts(folder):
    for name, columns in PIECES.items():
        write_edges(folder / name, *columns)
    write_edges(folder / "_old" / "x.parquet", [0], [1], [-5.0])  # skipped by the dataset rule
    (folder / "README.md").write_text("notes, not data")
    return folder


def concatenated(*names):
    src, dst, weight = (sum((PIECES[n][i] for n in names), []) for i in range(3))
    return src, dst, weight


def test_a_pattern_reads_its_matches_in_sorted_order(tmp_path, capsys):
    parts(tmp_path / "parts")
    code, out, err = run(mst_cli.main, [f"{tmp_path}/parts/*.parquet", "--output", tmp_path / "out"], capsys)
    assert code == 0, err
    assert_forest(tmp_path / "out" / "mst_edges.parquet", *concatenated("a.parquet", "b.parquet"))


def test_double_star_matches_files_in_any_folder(tmp_path, capsys):
    parts(tmp_path / "parts")
    code, _, err = run(mst_cli.main, [f"{tmp_path}/parts/**/*.parquet", "--output", tmp_path / "out"], capsys)
    assert code == 0, err
    assert_forest(tmp_path / "out" / "mst_edges.parquet", *concatenated("a.parquet", "b.parquet", "sub/c.parquet"))


def test_a_pattern_that_matches_folders_reads_them_whole_and_names_what_it_skips(tmp_path):
    found = discovery.dataset_files(f"{parts(tmp_path / 'parts')}/*")
    assert [p.relative_to(tmp_path / "parts").as_posix() for p in found.files] == \
        ["a.parquet", "b.parquet", "sub/c.parquet"]
    assert [p.name for p in found.skipped] == ["README.md"]


def test_the_default_output_is_named_after_the_folder_the_pattern_searches(tmp_path, capsys, monkeypatch):
    parts(tmp_path / "parts")
    monkeypatch.chdir(tmp_path)
    assert run(mst_cli.main, ["parts/*.parquet"], capsys)[0] == 0
    assert (tmp_path / "output" / "parts" / "mst_edges.parquet").is_file()


def test_no_match_is_one_line_before_prefect_is_imported(tmp_path):
    pattern = f"{tmp_path}/nothing/*.parquet"
    code = ("import sys\nfrom flows.cli import main\ncode = main('mst', sys.argv[1:])\n"
            "print('imported:', 'prefect' in sys.modules)\nsys.exit(code)")
    done = subprocess.run([sys.executable, "-c", code, pattern], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr.strip() == f"error: no file matches {pattern}"
    assert "imported: False" in done.stdout


def test_no_match_from_python_fails_the_run_naming_the_pattern(tmp_path):
    state = mst_cli.mst_flow(f"{tmp_path}/*.parquet", output=str(tmp_path / "out"), return_state=True)
    assert state.is_failed() and f"no file matches {tmp_path}/*.parquet" in state.message
    assert not (tmp_path / "out").exists()


def test_a_parquet_file_under_another_name_among_the_matches_is_refused(tmp_path, capsys):
    folder = parts(tmp_path / "parts")
    pq.write_table(pa.table({"src": [0], "dst": [1], "weight": [1.0]}), folder / "backup.bak")
    code, _, err = run(mst_cli.main, [f"{folder}/*", "--output", tmp_path / "out"], capsys)
    assert code == 1
    assert error_line(err).startswith(f"error: {folder / 'backup.bak'}: a Parquet file whose name is not")


def test_a_file_whose_name_holds_brackets_is_that_file(tmp_path, capsys):
    path = write_edges(tmp_path / "graph[1].parquet", *PIECES["a.parquet"])
    assert run(mst_cli.main, [path, "--output", tmp_path / "out"], capsys)[0] == 0
    assert_forest(tmp_path / "out" / "mst_edges.parquet", *PIECES["a.parquet"])


def test_a_pattern_in_a_bucket_reads_the_matching_objects(s3, tmp_path, capsys):
    upload(s3, parts(tmp_path / "parts"), "graphs/glob-parts")
    code, _, err = run(mst_cli.main, ["s3://graphs/glob-parts/*.parquet", "--output", tmp_path / "out"], capsys)
    assert code == 0, err
    assert_forest(tmp_path / "out" / "mst_edges.parquet", *concatenated("a.parquet", "b.parquet"))
    code, _, err = run(mst_cli.main, ["s3://graphs/glob-parts/*.pq", "--output", tmp_path / "none"], capsys)
    assert code == 1 and error_line(err) == "error: no file matches s3://graphs/glob-parts/*.pq"
