"""Review of the run paths made absolute in the flows, of the significant-digit count that sends
long decimal weights to the exact float64 check (tasks/parquet/checks.py), and of the code field of
the benchmark records. Faults are pinned by named cases against real Prefect runs and real git
repositories; the count against Python's Decimal."""
import os
import subprocess
import sys
from decimal import Context, Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.parquet.checks import DECIMAL_DIGITS_FLOAT64_KEEPS, significant_digits
from tests.references import assert_forest

ROOT = Path(__file__).resolve().parent.parent

# A process whose working folder is removed before it calls the flow (a shell left in a build
# folder that was deleted, a notebook whose folder was moved): argv is the folder, then the
# flow's input and output
FROM_A_REMOVED_FOLDER = """
import os, sys
os.chdir(sys.argv[1])
os.rmdir(sys.argv[1])
from flows.mst import mst_flow
state = mst_flow(sys.argv[2], output=sys.argv[3], return_state=True)
print(state.type.value)
print(state.message)
"""


def run_from_a_removed_folder(tmp_path: Path, input: str, output: str) -> list[str]:
    folder = tmp_path / "removed"
    folder.mkdir()
    # the checkout first, then what the environment already has (where Prefect may be installed)
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, "-c", FROM_A_REMOVED_FOLDER, str(folder), input, output],
                          env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()[-2:]


def small_graph(path: Path):
    src, dst, weight = [0, 1, 2, 0], [1, 2, 0, 3], [1.0, 2.0, 3.0, 0.5]
    pq.write_table(pa.table({"src": src, "dst": dst, "weight": weight}), path)
    return src, dst, weight


@pytest.mark.usefixtures("prefect_server")
def test_absolute_paths_run_from_a_folder_that_was_removed(tmp_path):
    """The flows make relative paths absolute against the current folder. They looked the folder
    up for absolute paths too, so a run given only absolute paths, from a process whose working
    folder had been removed, failed with "[Errno 2] No such file or directory", naming nothing;
    such a run needs no current folder and completes."""
    graph = small_graph(tmp_path / "g.parquet")
    state, _ = run_from_a_removed_folder(tmp_path, str(tmp_path / "g.parquet"), str(tmp_path / "o"))
    assert state == "COMPLETED"
    assert_forest(tmp_path / "o" / "mst_edges.parquet", *graph)


@pytest.mark.usefixtures("prefect_server")
def test_a_relative_path_from_a_folder_that_was_removed_is_named(tmp_path):
    """A relative path has no meaning once the folder it was given in is gone: the run fails
    naming the path, and writes nothing."""
    small_graph(tmp_path / "g.parquet")
    state, message = run_from_a_removed_folder(tmp_path, "g.parquet", str(tmp_path / "o"))
    assert state == "FAILED"
    assert ("input 'g.parquet' is relative, but the folder the run started in no longer exists; "
            "give an absolute path") in message
    assert not (tmp_path / "o").exists()


def reference_digits(value: Decimal) -> int:
    """Significant digits of a decimal's value: leading and trailing zeros of its digits are not
    (counted on the digits themselves: Decimal.normalize rounds to the context's 28 digits)."""
    return len("".join(map(str, value.as_tuple().digits)).strip("0"))


@st.composite
def long_decimals(draw):
    """A decimal type of more than 15 digits (both widths) and a value of it with some trailing
    zeros, either sign, possibly zero."""
    wide = draw(st.booleans())
    precision = draw(st.integers(16, 76 if wide else 38))
    scale = draw(st.integers(0, precision))
    zeros = draw(st.integers(0, precision - 1))
    unscaled = draw(st.integers(0, 10 ** (precision - zeros) - 1)) * 10 ** zeros
    # scaled exactly: the default context would round to 28 digits (999...9 becoming 1E+30)
    value = Decimal(draw(st.sampled_from([1, -1])) * unscaled).scaleb(-scale, context=Context(prec=100))
    return (pa.decimal256 if wide else pa.decimal128)(precision, scale), value


NAMED = [  # (type, value): each side of 15 digits, leading and trailing zeros, signs, zero, exponent text
    (pa.decimal128(38, 18), Decimal("-0.000123456789012345")),  # 15 digits after leading zeros
    (pa.decimal128(38, 18), Decimal("-0.001234567890123456")),  # 16
    (pa.decimal128(38, 18), Decimal("123456789012345.000000000000000000")),  # 15, trailing zeros
    (pa.decimal128(38, 18), Decimal("1234567890123456.5")),  # 17
    (pa.decimal128(38, 0), Decimal(2**53 + 1)),  # 16 digits
    (pa.decimal128(38, 0), Decimal(10**37)),  # 1 digit
    (pa.decimal128(38, 18), Decimal(0)),
    (pa.decimal128(26, 26), Decimal("1.234567890123456789E-7")),  # Arrow writes it with an exponent
    (pa.decimal128(26, 26), Decimal("1E-7")),
    (pa.decimal256(76, 38), Decimal("-" + "9" * 38 + "." + "9" * 38)),  # 76 digits
]


def check_count(type_, value):
    text = pa.chunked_array([pa.array([value], type_)]).cast(pa.string())
    count = significant_digits(text).to_pylist()[0]
    expected = reference_digits(value)
    assert count >= expected, (text, count, expected)
    # (an exponent's characters are counted: such a value only goes to the exact check)
    if "E" not in text[0].as_py():
        assert count == expected, (text, count, expected)
    assert (count > DECIMAL_DIGITS_FLOAT64_KEEPS) >= (expected > DECIMAL_DIGITS_FLOAT64_KEEPS)


@pytest.mark.parametrize("type_, value", NAMED, ids=[str(v) for _, v in NAMED])
def test_the_digit_count_of_named_decimals(type_, value):
    """The count that decides which decimals go to the exact check (more than 15 significant
    digits), against Decimal: never fewer digits than the value has, exact for plain text."""
    check_count(type_, value)


@settings(max_examples=300, deadline=None)
@given(long_decimals())
def test_the_digit_count_of_any_long_decimal(case):
    check_count(*case)


def git(where: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True, check=True).stdout.strip()


def test_the_benchmarks_code_field_names_the_checkout_they_are_imported_from(tmp_path, monkeypatch):
    """The records' `code` (benchmarks.orchestration.code_version, used by benchmarks.partitioned
    and benchmarks.host_cores) asked git about the folder the command ran in: from any other
    folder it named nothing, or another repository's commit. It names this checkout's."""
    from benchmarks.orchestration import code_version

    monkeypatch.delenv("GRAPH_BENCH_CODE", raising=False)
    monkeypatch.chdir(tmp_path)  # not a repository
    assert code_version().removesuffix("-dirty") == git(ROOT, "rev-parse", "--short=7", "HEAD")


def test_the_benchmarks_code_field_marks_uncommitted_changes(tmp_path, monkeypatch):
    """A record of a run whose tracked files differ from their commit named that commit alone,
    as if it had measured it."""
    from benchmarks.orchestration import code_version

    monkeypatch.delenv("GRAPH_BENCH_CODE", raising=False)
    git(tmp_path, "init", "-q")
    (tmp_path / "kernel.py").write_text("A = 1\n")
    git(tmp_path, "add", "kernel.py")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", "commit", "-q", "-m", "one")
    commit = git(tmp_path, "rev-parse", "--short=7", "HEAD")
    assert code_version(tmp_path) == commit
    (tmp_path / "kernel.py").write_text("A = 2\n")
    assert code_version(tmp_path) == f"{commit}-dirty"
    (tmp_path / "notes.txt").write_text("an untracked file is not code measured\n")
    (tmp_path / "kernel.py").write_text("A = 1\n")
    assert code_version(tmp_path) == commit
