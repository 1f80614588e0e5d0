"""Kill and resume: a run stopped at each failpoint (and by SIGKILL of its process group),
then run again, ends with the same articles as one uninterrupted run, and no chunk is
synthesized twice. Runs use the no-model path, in subprocesses without a Prefect server."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memvault.failpoints import EXIT_CODE
from tests.helpers import ROOT, copy_subset
from tests.stages.plain_run import plain_execute


def fresh(tmp: Path) -> tuple[Path, Path]:
    from memvault.ops.home import init_home

    tmp.mkdir(parents=True)
    home = tmp / "home"
    init_home(home)
    return home, copy_subset(tmp / "src")


def articles(home: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((home / "articles").glob("*.md"))}


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, "MEMVAULT_ENGINE": "none", "PYTHONPATH": str(ROOT), **extra}


def crash(home: Path, src: Path, **extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tests.stages.plain_run", str(home), str(src)], cwd=ROOT,
                            env=env(**extra), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)


def check_no_duplicates(home: Path) -> None:
    from memvault.config.settings import load_settings
    from stores.ledger import Ledger

    with Ledger.open(load_settings(home), read_only=True) as ledger:
        done = [c for b in ledger.buckets() for c in ledger.synthesized_chunks(b.name)]
        assert len(done) == len(set(done)) > 0  # no chunk synthesized twice, in one bucket or two
        assert ledger.intents() == []
    for name, text in articles(home).items():
        heads = re.findall(r"^## .+$", text, re.M)
        assert len(heads) == len(set(heads)), f"{name} has a duplicated section"


@pytest.fixture(scope="module")
def reference(tmp_path_factory, embedder) -> dict[str, str]:
    home, src = fresh(tmp_path_factory.mktemp("ref") / "r")
    with pytest.MonkeyPatch.context() as mp:  # module scope: the function-scoped monkeypatch is not available
        mp.setenv("MEMVAULT_ENGINE", "none")
        plain_execute(str(home), str(src))
    snap = articles(home)
    assert snap
    return snap


@pytest.mark.parametrize("point", ["chunk:1", "cluster:1", "synthesize:1", "index:1", "changelog:commit"])
def test_failpoint_then_rerun_equals_an_uninterrupted_run(point, reference, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("MEMVAULT_ENGINE", "none")
    home, src = fresh(tmp_path / "t")
    proc = crash(home, src, MEMVAULT_FAILPOINT=point)
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == EXIT_CODE, out.decode()[-3000:]
    plain_execute(str(home), str(src))
    assert articles(home) == reference
    check_no_duplicates(home)


def test_sigkill_of_the_process_group_then_rerun(reference, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("MEMVAULT_ENGINE", "none")
    home, src = fresh(tmp_path / "k")
    proc = crash(home, src)
    lock = home / ".memvault" / "writer.lock"
    deadline = time.monotonic() + 300
    while not lock.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(3.0)  # a few seconds into the run (mid chunk/embedding on this machine)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    plain_execute(str(home), str(src))
    assert articles(home) == reference
    check_no_duplicates(home)
