"""memvault's deployment files: `prefect.yaml` and the launchd / systemd templates.

Shipped inside the installed package, so `memvault deploy` and `memvault schedule` work from
an installed application as well as from a checkout. This module only reads the files and
finds where memvault is installed; registering with Prefect is in `deployments.deploy`.
"""

import importlib.util
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
PROJECT_FILE = HERE / "prefect.yaml"


def project() -> dict[str, Any]:
    """The parsed prefect.yaml."""
    return yaml.safe_load(PROJECT_FILE.read_text(encoding="utf-8"))


def deployment_specs() -> dict[str, dict[str, Any]]:
    """Each deployment of prefect.yaml by name."""
    return {d["name"]: d for d in project()["deployments"]}


def work_pool_name() -> str:
    """The process work pool every deployment runs on (one pool, named in prefect.yaml)."""
    names = {d["work_pool"]["name"] for d in project()["deployments"]}
    if len(names) != 1:
        raise ValueError(f"deployments/prefect.yaml names several work pools ({', '.join(sorted(names))}); use one")
    return names.pop()


def template(name: str) -> str:
    """A launchd or systemd template (string.Template syntax)."""
    return (HERE / name).read_text(encoding="utf-8")


def install_root() -> Path:
    """The folder holding the `flows` package: the working directory of every deployment.

    Found without importing the flows, so the core can ask too.
    """
    spec = importlib.util.find_spec("flows")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("the `flows` package is not importable — reinstall memvault (pip install memvault)")
    return Path(spec.origin).resolve().parent.parent
