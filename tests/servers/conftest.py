"""Fixtures of the door tests: a writable copy of the shared demo home, and bounded subprocesses."""

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.procs import stop

MEMVAULT = str(Path(sys.executable).parent / "memvault")


@pytest.fixture(scope="session")
def doors_home(demo_runs, tmp_path_factory) -> Path:
    """A copy of the demo home: recall appends to the access log, and demo_runs stays read-only."""
    home = tmp_path_factory.mktemp("doors") / "home"
    shutil.copytree(demo_runs["home"], home)
    return home


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", PYTHONUNBUFFERED="1")
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
