"""memvault's deployment files: `prefect.yaml` and the launchd / systemd templates.

The files live in the `deployments` folder, shipped inside the installed package, so
`memvault deploy` and `memvault schedule` work from an installed application as well as from a
checkout. Reading them is here, below both users: `memvault.ops.schedule` writes the units and
`deployments.deploy` registers with Prefect. The folder is found without importing it (no
import of the composition root from this layer).
"""

import importlib.util
from pathlib import Path
from typing import Any

import yaml


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"the `{name}` package is not importable — reinstall memvault (pip install memvault)")
    return Path(spec.origin).resolve().parent


def deployments_dir() -> Path:
    """The folder holding prefect.yaml and the unit templates."""
    return _package_dir("deployments")


def project() -> dict[str, Any]:
    """The parsed prefect.yaml."""
    parsed: dict[str, Any] = yaml.safe_load((deployments_dir() / "prefect.yaml").read_text(encoding="utf-8"))
    return parsed


def deployment_specs() -> dict[str, dict[str, Any]]:
    """Each deployment of prefect.yaml by name."""
    return {d["name"]: d for d in project()["deployments"]}


def work_pool_name() -> str:
    """The process work pool every deployment runs on (one pool, named in prefect.yaml)."""
    names = {d["work_pool"]["name"] for d in project()["deployments"]}
    if len(names) != 1:
        raise ValueError(f"deployments/prefect.yaml names several work pools ({', '.join(sorted(names))}); use one")
    name: str = names.pop()
    return name


def template(name: str) -> str:
    """A launchd or systemd template (string.Template syntax)."""
    return (deployments_dir() / name).read_text(encoding="utf-8")


def install_root() -> Path:
    """The folder holding the `flows` package: the working directory of every deployment.

    Found without importing the flows, so the core can ask too.
    """
    return _package_dir("flows").parent
