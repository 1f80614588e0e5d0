"""Dependencies point one way: domain → stores → stages → tasks, ops → flows, cli, servers.

- domain (``memvault`` minus ``stages``, ``ops``, ``cli``, ``servers``, ``demo``): plain data,
  text and engines; imports no store, stage, flow or Prefect.
- ``stores``: the only importers of duckdb, lancedb and git; use the domain only.
- ``memvault.stages``: the pipeline's stages, ``run_<stage>(ctx) -> StageResult``; domain and
  stores, never Prefect.
- ``tasks``: the stages as Prefect tasks (one factory) and the stage order.
- ``memvault.ops``: operations that own the writer lock and store handles; call the stages
  themselves, never their Prefect tasks, Prefect or flows — so what a hook runs (the live
  drainer, reindex, watch) never loads Prefect.
- ``flows``, ``memvault.cli``, ``memvault.servers``, ``memvault.demo``, ``deployments``: the
  composition root.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STORE_LIBRARIES = {"duckdb", "lancedb", "git"}
LAYERS = ("domain", "stores", "stages", "tasks", "ops", "root")
# What each layer may import among the project's own layers (third-party rules below).
ALLOWED = {
    "domain": {"domain"},
    "stores": {"domain", "stores"},
    "stages": {"domain", "stores", "stages"},
    "tasks": {"domain", "stores", "stages", "tasks"},
    "ops": {"domain", "stores", "stages", "ops"},
    "root": set(LAYERS),
}
NO_PREFECT = {"domain", "stores", "stages", "ops"}


def imported_modules(path: Path) -> set[str]:
    """Absolute module names imported anywhere in ``path`` (inside functions too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


def layer_of_module(module: str) -> str | None:
    """The layer of a project module name, None for a third-party one."""
    parts = module.split(".")
    if parts[0] == "memvault":
        if len(parts) > 1 and parts[1] in ("cli", "servers", "demo"):
            return "root"
        if len(parts) > 1 and parts[1] in ("ops", "stages"):
            return parts[1]
        return "domain"
    return {"stores": "stores", "tasks": "tasks", "flows": "root", "deployments": "root"}.get(parts[0])


def layer_of_file(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    return layer_of_module(".".join(rel.parts)) or "root"


def project_files() -> list[Path]:
    return sorted(p for pkg in ("memvault", "stores", "tasks", "flows", "deployments")
                  for p in (ROOT / pkg).rglob("*.py"))


def violations() -> list[str]:
    bad = []
    for path in project_files():
        layer = layer_of_file(path)
        for module in sorted(imported_modules(path)):
            top = module.split(".")[0]
            target = layer_of_module(module)
            where = f"{path.relative_to(ROOT)} ({layer}) imports {module}"
            if target is not None and target not in ALLOWED[layer]:
                bad.append(f"{where} ({target})")
            elif top == "prefect" and layer in NO_PREFECT:
                bad.append(where)
            elif top in STORE_LIBRARIES and layer != "stores":
                bad.append(where)
    return bad


def test_layers_point_one_way() -> None:
    assert violations() == []


def module_files() -> dict[str, Path]:
    """Every project module by its dotted name (a package by its ``__init__.py``)."""
    out = {}
    for path in project_files():
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imported_names(path: Path, module: str) -> set[str]:
    """Every name an import in ``path`` (module ``module``) may resolve to, anywhere in the
    file (inside functions and ``TYPE_CHECKING`` too): the module, relative imports made
    absolute, and ``from m import x`` as both ``m`` and ``m.x`` (x may be a submodule)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            out |= {base} | {f"{base}.{a.name}" for a in node.names}
    return out


def file_graph(files: dict[str, Path] | None = None) -> dict[str, set[str]]:
    """Module → the project modules it imports (a file-level graph)."""
    files = module_files() if files is None else files
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        graph[module] = {m for m in imported_names(path, module) if m in files and m != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one package (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(set(graph) | {w for ws in graph.values() for w in ws}):
        if v not in index:
            visit(v)
    return out


# File cycles the renovation (#28 item 7) has still to break, in areas being edited by other
# work when this check was written. The list may only shrink: a new cycle fails, and so does
# one listed here that is gone (remove it).
KNOWN_CYCLES: list[list[str]] = []  # none: a new one fails here


def test_no_import_cycle_between_files() -> None:
    assert sorted(cycles(file_graph())) == KNOWN_CYCLES


def test_the_checkers_see_what_they_must(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from prefect import flow\nimport memvault.stages.chunk\ndef f():\n    import duckdb\n")
    assert imported_modules(bad) == {"prefect", "memvault.stages.chunk", "duckdb"}
    assert layer_of_module("memvault.ops.forget") == "ops"
    assert layer_of_module("memvault.stages.chunk") == "stages"
    assert layer_of_module("memvault.markdown.tree") == "domain"
    assert layer_of_module("flows.nightly") == "root"
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    inner = tmp_path / "pkg" / "inner.py"
    inner.parent.mkdir()
    inner.write_text("from . import sibling\nfrom .other import thing\ndef f():\n    from deployments import x\n")
    assert imported_names(inner, "pkg.inner") == {"pkg", "pkg.sibling", "pkg.other", "pkg.other.thing",
                                                  "deployments", "deployments.x"}
    # the shape this check missed when it read packages: a cycle closed by a function's import
    deploy = tmp_path / "deploy.py"
    deploy.write_text("from pkg.inner import f\n")
    schedule = tmp_path / "schedule.py"
    schedule.write_text("def g():\n    from deploy import h\n")
    files = {"pkg.inner": inner, "deploy": deploy, "schedule": schedule, "pkg.other": bad}
    inner.write_text("import schedule\n")
    assert cycles(file_graph(files)) == [["deploy", "pkg.inner", "schedule"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
