"""A second writer is refused with one clear message: no Prefect traceback, in a real second
process, whether the lock is already held when `memvault run` starts or is taken after its
check (the run then fails inside the Prefect flow)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT, stop

HOLDER = """
import sys
from pathlib import Path
from memvault.lock import writer_lock
with writer_lock(Path(sys.argv[1]), "test holder", 5):
    print("ready", flush=True)
    sys.stdin.readline()
"""

# The race: another writer takes the lock after `memvault run` checked it was free, so the
# refusal comes from inside the flow run (Prefect logs that exception with its traceback).
LOST_RACE = """
import sys
import memvault.lock
memvault.lock.wait_until_free = lambda *args, **kwargs: None
from memvault.cli import main
sys.argv = ["memvault", *sys.argv[1:]]
main()
"""


@pytest.fixture
def held(home: Path):
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(home / ".memvault")], cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        yield proc
    finally:
        proc.stdin.close()
        stop(proc)


def _env(tmp_path: Path) -> dict[str, str]:
    # INFO: Prefect's own lines show (an earlier `--json` test may have set WARNING here).
    env = {**os.environ, "MEMVAULT_LOCK_TIMEOUT_S": "1", "MEMVAULT_ENGINE": "none",
           "PREFECT_HOME": str(tmp_path / "prefect"), "PREFECT_LOGGING_LEVEL": "INFO"}
    env.pop("PREFECT_API_URL", None)
    return env


def _refused(result: subprocess.CompletedProcess, holder_pid: int) -> None:
    assert result.returncode == 1, result.stderr
    assert f"error: another memvault process (pid {holder_pid}, test holder, since " in result.stderr
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    assert "Encountered exception" not in result.stderr


def test_second_run_is_refused_before_prefect_starts(home: Path, tmp_path: Path, held) -> None:
    exe = Path(sys.executable).parent / "memvault"
    result = subprocess.run([str(exe), "--home", str(home), "run"], capture_output=True, text=True, cwd=ROOT,
                            env=_env(tmp_path), timeout=300)
    _refused(result, held.pid)
    assert "temporary server" not in result.stderr  # refused before any Prefect server started
    as_json = subprocess.run([str(exe), "--home", str(home), "run", "--json"], capture_output=True, text=True,
                             cwd=ROOT, env=_env(tmp_path), timeout=300)
    assert as_json.returncode == 1 and '"type": "LockedError"' in as_json.stdout


def test_lock_taken_after_the_check_still_prints_only_the_message(home: Path, tmp_path: Path, held) -> None:
    result = subprocess.run([sys.executable, "-c", LOST_RACE, "--home", str(home), "run", "--only", "changelog"],
                            capture_output=True, text=True, cwd=ROOT, env=_env(tmp_path), timeout=600)
    _refused(result, held.pid)
    assert "Flow run" in result.stderr  # it did get as far as a flow run


DRAINER = HOLDER.replace('"test holder"', '"memvault drain"')


def test_a_run_right_after_a_capture_waits_for_the_drainer_with_progress(home: Path, tmp_path: Path) -> None:
    # The live drainer holds the lock (longer than lock_timeout_s, 1 s here): `memvault run`
    # says it waits, and runs once the drainer is done — no LockedError.
    drainer = subprocess.Popen([sys.executable, "-c", DRAINER, str(home / ".memvault")], cwd=ROOT,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    exe = Path(sys.executable).parent / "memvault"
    try:
        assert drainer.stdout.readline().strip() == "ready"
        run = subprocess.Popen([str(exe), "--home", str(home), "run", "--only", "ingest", "--json"], cwd=ROOT,
                               env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = run.stderr.readline()
        assert f"waiting for the live drainer (pid {drainer.pid}" in first
        drainer.stdin.close()  # the drainer stores its entries and lets the lock go
        out, err = run.communicate(timeout=600)
    finally:
        stop(drainer)
    assert run.returncode == 0, err
    assert '"status": "completed"' in out and "LockedError" not in out + err
