"""Parquet's format facts are defined once, in kernels/parquet/format.py, read from the sources:
the kernels' Parquet package imports nothing from the layers above it; format.py imports only
the standard library; no other module (tests included) assigns a name format.py defines,
defines a ULEB128 reader of its own or spells a Thrift field id as a number; no CUDA source
defines a name the format's preamble writes; and the codec tables keyed by codec name use
format.py's names."""
import ast
import re
import sys

from kernels.cuda_source import DIRECTORY, FILES, parquet_preamble
from kernels.parquet import format as parquet_format
from tests.conftest import ROOT
from tests.test_module_layers import project_imports

FORMAT = ROOT / "kernels" / "parquet" / "format.py"
PACKAGES = ("kernels", "tasks", "flows", "benchmarks", "data", "tests")


def project_files():
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


def format_names() -> set[str]:
    """The constants (upper-case names) and functions format.py defines at module level."""
    return {name for name, _ in module_level_definitions(FORMAT.read_text())
            if name.isupper() or not name.startswith("_")}


def module_level_definitions(source: str):
    """(name, line) of every name a module binds at its top level: assignments (tuples
    unpacked), functions and classes."""
    for node in ast.parse(source).body:
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name, node.lineno
        for target in targets:
            for leaf in ast.walk(target):
                if isinstance(leaf, ast.Name):
                    yield leaf.id, node.lineno


def uleb128_readers(source: str) -> list[str]:
    """Functions that read a ULEB128: their body shifts a byte's low 7 bits into place
    (``(b & 0x7F) << shift``, the loop of every varint reader)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for inner in ast.walk(node):
            if (isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.LShift)
                    and isinstance(inner.left, ast.BinOp) and isinstance(inner.left.op, ast.BitAnd)
                    and any(isinstance(side, ast.Constant) and side.value == 0x7F
                            for side in (inner.left.left, inner.left.right))):
                found.append(f"{node.name} (line {node.lineno})")
                break
    return found


# The compact protocol's type codes by format.py's names: the second entry of a tree's field
THRIFT_TYPE_NAMES = {"TRUE", "FALSE", "BYTE", "I16", "I32", "I64", "DOUBLE", "BINARY", "LIST", "SET", "MAP",
                     "STRUCT"}


def struct_field_classes() -> dict[str, dict[str, int]]:
    """format.py's field-id classes (one per parquet.thrift struct): name -> {field: id}."""
    return {name: {k: v for k, v in vars(value).items() if not k.startswith("_")}
            for name, value in vars(parquet_format).items() if isinstance(value, type) and name.endswith("Field")}


def _integers(node) -> bool:
    """Whether an expression is an integer or a tuple, list or set of integers."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return bool(node.elts) and all(_integers(e) for e in node.elts)
    return isinstance(node, ast.Constant) and type(node.value) is int


def _names_fields(node, names: set) -> bool:
    """Whether a dict display maps integers to field names (or to dicts that do): an id table."""
    return (isinstance(node, ast.Dict) and bool(node.keys)
            and all(isinstance(k, ast.Constant) and type(k.value) is int for k in node.keys)
            and all((isinstance(v, ast.Constant) and v.value in names) or _names_fields(v, names)
                    for v in node.values))


def literal_field_ids(source: str) -> list[str]:
    """Where a module spells a Thrift field id as a number rather than by format.py's name: the
    id of a tree's field ``[id, TYPE, value]`` (TYPE a type code) or the id ``field(tree, id)``
    looks up, written as an integer, as a name the module binds at its top level to integers
    (a table of ids of its own), or as a loop variable over either (within one top-level
    function, class or statement); and a top-level dict from
    integers to field names (PAGE_HEADER_FIELDS' shape)."""
    tree = ast.parse(source)
    field_names = set(parquet_format.PAGE_FIELDS)
    for fields in struct_field_classes().values():
        field_names |= set(fields)
    tables, found = set(), []
    for node in tree.body:
        if isinstance(node, ast.Assign) and _integers(node.value):
            tables |= {leaf.id for t in node.targets for leaf in ast.walk(t) if isinstance(leaf, ast.Name)}
        if isinstance(node, ast.Assign) and _names_fields(node.value, field_names):
            found += [f"{t.id} (line {node.lineno}): a table of field ids" for t in node.targets
                      if isinstance(t, ast.Name)]
    for statement in tree.body:  # a top-level function or class, or statement: loop variables' scope
        loops = {}  # loop variable -> what it iterates over
        for node in ast.walk(statement):
            if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name):
                loops[node.target.id] = node.iter

        def numeric(node) -> bool:
            if isinstance(node, ast.Name) and node.id in loops and node.id not in tables:
                node = loops[node.id]
            return _integers(node) or (isinstance(node, ast.Name) and node.id in tables)

        for node in ast.walk(statement):
            ids = []
            if (isinstance(node, ast.List) and len(node.elts) == 3
                    and getattr(node.elts[1], "id", getattr(node.elts[1], "attr", None)) in THRIFT_TYPE_NAMES):
                ids.append(node.elts[0])
            elif (isinstance(node, ast.Call) and len(node.args) == 2
                  and getattr(node.func, "id", getattr(node.func, "attr", None)) == "field"):
                ids.append(node.args[1])
            found += [f"{ast.unparse(i)} (line {i.lineno})" for i in ids if numeric(i)]
    return found


def test_the_kernels_parquet_package_imports_nothing_from_tasks_or_flows():
    imports, _ = project_imports()
    upward = sorted((module, target) for module, targets in imports.items() if module.startswith("kernels.parquet")
                    for target in targets if target.split(".")[0] in ("tasks", "flows", "benchmarks"))
    assert upward == []


def test_format_imports_only_the_standard_library():
    imported = set()
    for node in ast.walk(ast.parse(FORMAT.read_text())):
        if isinstance(node, ast.Import):
            imported.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "a relative import in format.py"
            imported.add(node.module.split(".")[0])
    assert imported - set(sys.stdlib_module_names) - {"__future__"} == set()


def test_no_other_module_defines_a_name_of_the_format():
    names = format_names()
    assert {"DATA_PAGE", "DICTIONARY_PAGE", "DATA_PAGE_V2", "PLAIN", "RLE_DICTIONARY", "BYTE_STREAM_SPLIT",
            "ENCODING_NAMES", "PHYSICAL_TYPES", "PHYSICAL_DTYPES", "CODECS", "TRUE", "I32", "STRUCT", "PAGE_FIELDS",
            "PAGE_HEADER_FIELDS", "read_uleb128", "uleb128", "zigzag_decode"} <= names
    twice = [f"{path.relative_to(ROOT)}:{line} {name}" for path in project_files() if path != FORMAT
             for name, line in module_level_definitions(path.read_text()) if name in names]
    assert twice == [], "defined in kernels/parquet/format.py: import it from there"


def test_no_other_module_reads_uleb128_itself():
    assert [r.split(" ")[0] for r in uleb128_readers(FORMAT.read_text())] == ["read_uleb128"]
    own = [f"{path.relative_to(ROOT)}: {reader}" for path in project_files() if path != FORMAT
           for reader in uleb128_readers(path.read_text())]
    assert own == [], "kernels.parquet.format.read_uleb128 reads ULEB128s"


def test_the_checks_find_what_they_look_for():
    """Neither check above can pass by finding nothing: a module of its own constant and varint
    loop is caught by both."""
    source = ("PLAIN, OTHER = 0, 1\n"
              "def varint(buf, pos):\n"
              "    value = shift = 0\n"
              "    while True:\n"
              "        b = buf[pos]\n"
              "        pos += 1\n"
              "        value |= (b & 0x7F) << shift\n"
              "        if b < 0x80:\n"
              "            return value, pos\n"
              "        shift += 7\n")
    assert [name for name, _ in module_level_definitions(source) if name in format_names()] == ["PLAIN"]
    assert uleb128_readers(source) == ["varint (line 2)"]


def test_no_cuda_source_defines_a_name_the_format_preamble_writes():
    preamble = parquet_preamble()
    written = set(re.findall(r"constexpr \w+ (\w+) =", preamble))
    written |= set(re.findall(r"\b(PH_\w+)\b", re.search(r"enum \{([^}]*)\}", preamble).group(1)))
    written |= set(re.findall(r"__forceinline__ \w+ (\w+)\(", preamble))
    assert {"DATA_PAGE", "DATA_PAGE_V2", "T_STRUCT", "PH_CHUNK", "PH_FIELDS", "nested_header_slot"} <= written
    for file in FILES:
        text = (DIRECTORY / file).read_text()
        defined = sorted(name for name in written
                         if re.search(rf"#define\s+{name}\b|\b{name}\s*=[^=]|enum\s*\{{[^}}]*\b{name}\b"
                                      rf"|__device__[^;{{}}]*\b{name}\s*\(", text))
        assert defined == [], f"kernels/cuda/{file} defines what kernels/parquet/format.py states"


def test_the_codec_tables_use_the_format_codec_names():
    from tasks.parquet.codec.decompress import HOST_CODECS, NVCOMP_CODECS
    from tasks.parquet.write.results import COMPRESSION_CODECS

    for table in (HOST_CODECS, NVCOMP_CODECS, {codec: None for codec in COMPRESSION_CODECS.values()}):
        assert set(table) <= set(parquet_format.CODECS)


def test_the_format_names_the_field_ids_of_each_struct_once():
    classes = struct_field_classes()
    assert {"PageHeaderField", "DataPageHeaderField", "FileMetaDataField", "ColumnMetaDataField"} <= set(classes)
    for name, fields in classes.items():
        ids = sorted(fields.values())
        assert ids == sorted(set(ids)) and all(type(i) is int and i > 0 for i in ids), name
    header = classes["PageHeaderField"]
    assert set(parquet_format.PAGE_HEADER_FIELDS) | set(parquet_format.NESTED_HEADER_FIELDS) <= set(header.values())


def test_no_other_module_spells_a_thrift_field_id_as_a_number():
    spelled = [f"{path.relative_to(ROOT)}: {where}" for path in project_files() if path != FORMAT
               for where in literal_field_ids(path.read_text())]
    assert spelled == [], "name Thrift field ids by kernels/parquet/format.py's *Field classes"


def test_the_field_id_check_finds_what_it_looks_for():
    """The check above cannot pass by finding nothing: each way of spelling an id as a number is
    caught, and format.py's names are not."""
    source = ("from kernels.parquet.format import I32, STRUCT, FileMetaDataField, RowGroupField\n"
              "NUM_ROWS, ROW_GROUPS = 3, 4\n"
              "POSITIONS = (9, 10, 11)\n"
              "KEPT = {1: 'page_type', 5: {1: 'num_values'}}\n"
              "header = [[1, I32, 0], [RowGroupField.num_rows, I32, 0], [5, STRUCT, []]]\n"
              "rows = field(meta, NUM_ROWS)\n"
              "groups = field(meta, FileMetaDataField.row_groups)\n"
              "moved = [field(column, fid) for fid in POSITIONS]\n"
              "for fid in (8, 9):\n"
              "    field(meta, fid)\n")
    assert sorted(literal_field_ids(source)) == sorted([
        "KEPT (line 4): a table of field ids", "1 (line 5)", "5 (line 5)", "NUM_ROWS (line 6)", "fid (line 8)",
        "fid (line 10)"])
