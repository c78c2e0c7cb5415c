"""The house's import rule, read from the sources (every import, at module level or inside a
function): flows -> tasks -> kernels, never back up a layer (kernels and data are the floor,
benchmarks sit above flows); no import circle between the project's modules; no private name
(``_x``) imported from another module."""
import ast

from tests.conftest import ROOT

LAYERS = {"kernels": 0, "data": 0, "tasks": 1, "flows": 2, "benchmarks": 3}


def project_imports() -> dict[str, set[str]]:
    """module -> the project modules it imports (``from package import module`` counted as the
    module), and the private names imported, as (importer, module, name)."""
    modules = {}
    for package in LAYERS:
        for path in (ROOT / package).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            modules[name] = path
    imports, private = {}, []
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    whole = f"{node.module}.{a.name}"
                    found.add(whole if whole in modules else node.module)
                    if a.name.startswith("_") and not a.name.startswith("__") and node.module in modules:
                        private.append((name, node.module, a.name))
        imports[name] = {m for m in found if m in modules and m != name}
    return imports, private


def circles(imports: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, groups = {}, {}, set(), [], []
    for root in imports:
        if root in index:
            continue
        work = [(root, iter(sorted(imports[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(imports[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    group.append(w)
                    if w == v:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def test_no_module_imports_from_a_layer_above_its_own():
    imports, _ = project_imports()
    upward = sorted((a, b) for a, targets in imports.items() for b in targets
                    if LAYERS[b.split(".")[0]] > LAYERS[a.split(".")[0]])
    assert upward == []


def test_no_import_circle_between_modules():
    imports, _ = project_imports()
    assert circles(imports) == []


def test_no_private_name_is_imported_from_another_module():
    _, private = project_imports()
    assert private == []


def test_the_circle_finder_finds_a_circle_through_three_modules():
    """The check above cannot pass by finding nothing: a -> b -> c -> a is one circle, d apart."""
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}) == [["a", "b", "c"]]
