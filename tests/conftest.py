"""Shared fixtures: a fresh memory home, the real embedding model, Prefect's test harness,
one real nightly-flow run over the bundled samples shared by the integration tests (and
writable copies of its home), bounded subprocesses, and the tiny random llama with a real
`mlx_lm.server` serving it. Plain helpers are in tests/helpers.py."""

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memvault.config.prefect_env import apply_prefect_defaults


apply_prefect_defaults()  # before any test module imports prefect
# No test may lean on this machine's git identity or settings (a fresh machine has none):
# git reads no global or system config here, and every test that commits names its author.
os.environ["GIT_CONFIG_GLOBAL"] = os.devnull
os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Hooks run by tests answer in process: a hook daemon would outlive its test's home
# (tests/live/test_hook_daemon.py turns it back on where it is the subject).
os.environ["MEMVAULT_HOOKD"] = "off"

from tests.helpers import SAMPLES, child_env, free_port, run_flow, stop  # noqa: E402
from tests.tiny_model import build_tiny_llama  # noqa: E402

SERVER_START_TIMEOUT_S = 60.0


@pytest.fixture
def home(tmp_path: Path) -> Path:
    from memvault.ops.home import init_home

    path = tmp_path / "home"
    init_home(path)
    return path


@pytest.fixture(scope="session")
def embedder():
    """The product's default embedder (MiniLM, int8), as `embedder_for` gives it."""
    from memvault.config.settings import Settings
    from memvault.embeddings.select import embedder_for

    return embedder_for(Settings())


@pytest.fixture(scope="session")
def fp32_embedder():
    """MiniLM in fp32: the export checked against sentence-transformers, the int8 graph's source."""
    from memvault.embeddings.minilm import MiniLMEmbedder

    return MiniLMEmbedder()


@pytest.fixture(scope="session")
def prefect():
    """One temporary Prefect API for the whole session (flows run for real against it)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield


@pytest.fixture(scope="session")
def demo_runs(tmp_path_factory, prefect):
    """Two nightly runs over the samples, with the home's git log and file snapshots between."""
    from memvault.ops.home import init_home
    from stores.vault import Vault

    home = tmp_path_factory.mktemp("demo") / "home"
    init_home(home)
    samples = tmp_path_factory.mktemp("samples") / "samples"
    shutil.copytree(SAMPLES, samples)
    first = run_flow(home, paths=[str(samples)], engine="none")
    vault = Vault(home)
    commits_after_first = vault.commit_count()
    snapshot = {p.name: p.read_text() for p in vault.list_articles()}
    second = run_flow(home, paths=[str(samples)], engine="none")
    return {"home": home, "samples": samples, "first": first, "second": second,
            "commits_after_first": commits_after_first, "snapshot": snapshot}


@pytest.fixture
def demo_copy(demo_runs, tmp_path: Path) -> Path:
    """A private copy of the demo home, for a test that changes it (demo_runs stays read-only)."""
    home = tmp_path / "home"
    shutil.copytree(demo_runs["home"], home, symlinks=True)
    return home


@pytest.fixture(scope="session")
def doors_home(demo_runs, tmp_path_factory) -> Path:
    """A copy of the demo home: recall appends to the access log, and demo_runs stays read-only."""
    home = tmp_path_factory.mktemp("doors") / "home"
    shutil.copytree(demo_runs["home"], home)
    return home


@pytest.fixture
def spawn() -> Iterator:
    """Start subprocesses that are always stopped (terminate, then kill) when the test ends."""
    procs: list[subprocess.Popen] = []

    def start(args: list[str], **kwargs) -> subprocess.Popen:
        proc = subprocess.Popen(args, env=child_env(), **kwargs)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        stop(proc)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random-weight llama folder, built once per session."""
    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


def _offline_env(tmp: Path) -> dict[str, str]:
    # An empty HF cache of its own: nothing downloaded, and /v1/models has a cache to scan.
    (tmp / "hf" / "hub").mkdir(parents=True, exist_ok=True)
    return {**os.environ, "HF_HOME": str(tmp / "hf"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


@pytest.fixture(scope="session")
def mlx_server(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL (…/v1) of a real `mlx_lm.server` on loopback serving the tiny model."""
    import httpx

    tmp = tmp_path_factory.mktemp("mlx-server")
    port = free_port()
    log_path = tmp / "server.log"
    with log_path.open("wb") as log_file:
        command = [sys.executable, "-m", "mlx_lm.server", "--model", str(tiny_model)]
        proc = subprocess.Popen(
            [*command, "--host", "127.0.0.1", "--port", str(port)],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=_offline_env(tmp),
        )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"mlx_lm.server exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                if httpx.get(f"{base}/health", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                tail = log_path.read_text()[-3000:]
                pytest.fail(f"mlx_lm.server not healthy in {SERVER_START_TIMEOUT_S:g}s:\n{tail}")
            time.sleep(0.2)
        yield f"{base}/v1"
    finally:
        stop(proc)
