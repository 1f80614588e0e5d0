"""Shared fixtures: a fresh memory home, the real embedding model, Prefect's test harness,
and one real nightly-flow run over the bundled samples shared by the integration tests."""

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
from memvault.logs import route_to_prefect  # noqa: E402 - before anything imports Prefect

route_to_prefect()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    from memvault.ops.home import init_home

    path = tmp_path / "home"
    init_home(path)
    return path


@pytest.fixture(scope="session")
def embedder():
    from memvault.embeddings import Embedder

    return Embedder()


@pytest.fixture(scope="session")
def prefect():
    """One temporary Prefect API for the whole session (flows run for real against it)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield


def run_flow(home: Path, **options):
    """A real nightly flow run on ``home``; returns the report."""
    from flows.nightly import RunOptions, nightly

    return nightly(RunOptions(home=str(home), **options))


@pytest.fixture(scope="session")
def demo_runs(tmp_path_factory, prefect):
    """Two nightly runs over the samples, with the home's git log and file snapshots between."""
    from memvault.ops.home import init_home
    from stores.vault import Vault

    home = tmp_path_factory.mktemp("demo") / "home"
    init_home(home)
    samples = tmp_path_factory.mktemp("samples") / "samples"
    shutil.copytree(SAMPLES, samples)
    os.environ["MEMVAULT_ENGINE"] = "none"
    first = run_flow(home, paths=[str(samples)])
    vault = Vault(home)
    commits_after_first = vault.commit_count()
    snapshot = {p.name: p.read_text() for p in vault.list_articles()}
    second = run_flow(home, paths=[str(samples)])
    return {"home": home, "samples": samples, "first": first, "second": second,
            "commits_after_first": commits_after_first, "snapshot": snapshot}


@pytest.fixture
def demo_copy(demo_runs, tmp_path: Path) -> Path:
    """A private copy of the demo home, for a test that changes it (demo_runs stays read-only)."""
    home = tmp_path / "home"
    shutil.copytree(demo_runs["home"], home, symlinks=True)
    return home
