"""Dependencies point one way: stores and the core never import prefect, flows or tasks."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = {"prefect", "flows", "tasks"}
# The composition root (CLI, servers, the demo) may reach into flows; nothing else in memvault/.
COMPOSITION_ROOT = {"cli", "servers", "demo.py"}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


def offenders(package: str, skip: set[str] = frozenset()) -> list[str]:
    bad = []
    for path in sorted((ROOT / package).rglob("*.py")):
        rel = path.relative_to(ROOT / package)
        if rel.parts[0] in skip:
            continue
        for module in imported_modules(path):
            if module.split(".")[0] in FORBIDDEN:
                bad.append(f"{path.relative_to(ROOT)} imports {module}")
    return bad


def test_stores_never_import_prefect_flows_or_tasks() -> None:
    assert offenders("stores") == []


def test_core_never_imports_prefect_flows_or_tasks() -> None:
    assert offenders("memvault", skip=COMPOSITION_ROOT) == []


def test_the_checker_sees_a_forbidden_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from prefect import flow\nimport tasks.chunk\n")
    assert imported_modules(bad) == {"prefect", "tasks.chunk"}
