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
    if parts[0] == "deployments":
        # The package itself only reads the shipped templates (data); `deployments.deploy`
        # registers flows with Prefect.
        return "domain" if len(parts) == 1 else "root"
    return {"stores": "stores", "tasks": "tasks", "flows": "root"}.get(parts[0])


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


def package_of(module: str) -> str | None:
    """The node of a module in the cycle check: its layer, the composition root split into
    its packages (flows, the CLI, the servers, the demo, deployment registration)."""
    layer = layer_of_module(module)
    if layer != "root":
        return layer
    parts = module.split(".")
    return ".".join(parts[:2])


def package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in project_files():
        rel = path.relative_to(ROOT).with_suffix("")
        src = package_of(".".join(rel.parts))
        assert src is not None
        for module in imported_modules(path):
            dst = package_of(module)
            if dst is not None and dst != src:
                graph.setdefault(src, set()).add(dst)
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


def test_no_package_import_cycle() -> None:
    assert cycles(package_graph()) == []


def test_the_checkers_see_what_they_must(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from prefect import flow\nimport memvault.stages.chunk\ndef f():\n    import duckdb\n")
    assert imported_modules(bad) == {"prefect", "memvault.stages.chunk", "duckdb"}
    assert layer_of_module("memvault.ops.forget") == "ops"
    assert layer_of_module("memvault.stages.chunk") == "stages"
    assert layer_of_module("memvault.markdown.tree") == "domain"
    assert layer_of_module("flows.nightly") == "root"
    assert package_of("memvault.cli.app") == "memvault.cli"
    assert package_of("stores.ledger") == "stores"
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert package_of("memvault.cli.app") == "memvault.cli"
    assert package_of("stores.ledger") == "stores"
    assert cycles({"a": {"b"}, "b": set()}) == []
