"""Fixtures for engine tests: the tiny random llama, and a real mlx_lm.server serving it."""

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.procs import stop
from tests.tiny_model import build_tiny_llama

SERVER_START_TIMEOUT_S = 60.0


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random-weight llama folder, built once per session."""
    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _offline_env(tmp: Path) -> dict[str, str]:
    # An empty HF cache of its own: nothing downloaded, and /v1/models has a cache to scan.
    (tmp / "hf" / "hub").mkdir(parents=True, exist_ok=True)
    return {**os.environ, "HF_HOME": str(tmp / "hf"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


@pytest.fixture(scope="session")
def mlx_server(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL (…/v1) of a real `mlx_lm.server` on loopback serving the tiny model."""
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
