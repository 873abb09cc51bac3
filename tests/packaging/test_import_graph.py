"""Imports go one way: no module of `core` or `bpe_studio` imports, even lazily, one that
imports it back, and no C header of `core` includes one that includes it back.

Every import counts: at module level and inside functions (a lazy import is still a
dependency), but not under ``if TYPE_CHECKING:``. ``from a.b import c`` where ``c`` is a
submodule is an edge to ``a.b.c``; otherwise to ``a.b`` (the package's ``__init__``, which
re-exports its submodules, so a submodule importing its own package closes a circle). A
package's ``importlib.import_module("x")`` and a ``{name: "x"}`` table of homes (``core``'s
lazy names) are edges to ``x``. A cycle is reported as its strongly connected component
with the edges inside it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "bpe_studio")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    """Every module of the tree: its ``.py`` files, and the C extensions (named by their
    ``.pyi`` stubs), which import nothing of ours."""
    return {_module_name(p): p for pkg in PACKAGES for ext in ("*.pyi", "*.py")
            for p in sorted((REPO / pkg).rglob(ext))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST) -> Iterator[ast.AST]:
    """Every node below ``node``, skipping the bodies of ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                yield other
                yield from _walk(other)
            continue
        yield child
        yield from _walk(child)


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of the tree that ``name`` (at ``path``) imports."""
    if path.suffix == ".pyi":
        return set()
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()

    def add(target: str) -> None:
        # the most specific module of the tree the dotted name lies in
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)

    for node in _walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                add(sub if sub in modules else base)
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called == "import_module" and node.args and isinstance(node.args[0], ast.Constant):
                if isinstance(node.args[0].value, str):
                    add(node.args[0].value)
        elif isinstance(node, ast.Dict):
            for value in node.values:
                if isinstance(value, ast.Constant) and value.value in modules:
                    add(value.value)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node, or with a self-edge
    (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph.get(node, ()):
                    components.append(sorted(component))
    return components


def _describe(graph: dict[str, set[str]], components: list[list[str]]) -> str:
    lines = []
    for component in components:
        members = set(component)
        lines.append("cycle among " + ", ".join(component) + ":")
        lines += [f"    {a} -> {b}" for a in component for b in sorted(graph[a] & members)]
    return "\n".join(lines)


def module_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)


def include_graph() -> dict[str, set[str]]:
    files = sorted(p for ext in ("*.c", "*.h") for p in (REPO / "core").rglob(ext))
    graph: dict[str, set[str]] = {}
    for path in files:
        edges = set()
        for included in INCLUDE.findall(path.read_text(encoding="utf-8")):
            target = (path.parent / included).resolve()
            if target.is_file():  # "pythread.h" and the like are Python's, not ours
                edges.add(target.relative_to(REPO).as_posix())
        graph[path.relative_to(REPO).as_posix()] = edges
    return graph


def test_the_finder_sees_every_kind_of_import() -> None:
    graph = module_graph()
    assert "core.training.options" in graph["core"]  # the lazy names' homes
    assert "core.variants.picky" in graph["core.variants"]  # a package re-exporting
    assert "core.variants._picky_kernel" in graph["core.variants.picky"]  # a C extension (lazily)
    assert graph["core.corpus"] == set() or all(m.startswith("core") for m in graph["core.corpus"])
    assert not any(m.startswith("bpe_studio") for name in graph if name.startswith("core") for m in graph[name])
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"a"}}) == [["a"]] and _cycles({"a": {"b"}, "b": set()}) == []


def test_imports_are_acyclic() -> None:
    graph = module_graph()
    components = _cycles(graph)
    assert not components, "imports must go one way down the pipeline:\n" + _describe(graph, components)


def test_c_includes_are_acyclic() -> None:
    graph = include_graph()
    assert "core/pretokenize/_scanner.h" in graph["core/pretokenize/_ascii_cut.h"]
    components = _cycles(graph)
    assert not components, "#include must go one way:\n" + _describe(graph, components)


def test_what_moved_down_still_loads_in_a_fresh_process(tmp_path: Path) -> None:
    """Named counts are read through a reader `core.corpus.named_counts` hands down, and a
    Picky folder is loaded with no import of `core.variants`: both from a fresh process."""
    import subprocess
    import sys

    import core
    from core.variants import Picky

    (tmp_path / "en.txt").write_text("the cat the hat " * 50, encoding="utf-8")
    core.count_pretokens({"en": str(tmp_path / "en.txt")}).save(tmp_path / "named.bpc")
    run = core.train(str(tmp_path / "en.txt"), core.TrainOptions(270, [], variant=Picky(0.9)))
    run.tokenizer().save(tmp_path / "picky")
    script = (
        "import sys, core\n"
        f"counts = core.PretokenCounts.load({str(tmp_path / 'named.bpc')!r})\n"
        "assert counts.sources == ('en',), counts\n"
        "from core.encode.tokenizer import Tokenizer\n"
        f"tok = Tokenizer.load({str(tmp_path / 'picky')!r})\n"
        "assert type(tok).__name__ == 'PickyTokenizer' and tok.decode(tok.encode('the hat')) == 'the hat'\n"
        "assert 'core.variants' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, cwd=REPO, timeout=120)
