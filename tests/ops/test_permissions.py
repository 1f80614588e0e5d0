"""Owner-only homes (issue 26 §2): what memvault creates is 0700/0600 whatever the umask, a
wider home is named by `status` and narrowed by `init --fix-permissions`.

The suite runs as root, where a permission check would always pass, so the tests read the
mode bits themselves.
"""

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

from memvault.files import wide_paths
from tests.helpers import MEMVAULT, SAMPLES, child_env, cli

SAMPLE = SAMPLES / "claude-code" / "-Users-sam-src-tidepool" / "3261b8ab-5e67-5336-a1ad-f00b145dadd3.jsonl"


def memvault(home: Path, *args: str, env: dict[str, str] | None = None, stdin: str | None = None) -> str:
    """The real `memvault` executable, started with the common umask 022."""
    out = subprocess.run([MEMVAULT, "--home", str(home), *args], input=stdin, capture_output=True, text=True,
                         timeout=600, env=env or child_env(), preexec_fn=lambda: os.umask(0o022))
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def modes(paths: list[Path], home: Path) -> dict[str, str]:
    return {str(p.relative_to(home)): oct(stat.S_IMODE(p.lstat().st_mode)) for p in paths}


def test_everything_memvault_creates_is_owner_only_under_umask_022(tmp_path: Path) -> None:
    home = tmp_path / "home"
    src = tmp_path / "projects" / "-Users-sam-src-tidepool"
    src.mkdir(parents=True)
    shutil.copy(SAMPLE, src / SAMPLE.name)
    memvault(home, "init")
    (home / "memvault.toml").write_text((home / "memvault.toml").read_text()
                                        + f'\n[[sources]]\nkind = "claude-code"\npath = "{src.parent}"\n')
    # A run as a person starts it (Prefect's database in the home, as a user may set it up):
    # ledger, index, run report, vault commit with its git objects.
    env = {**child_env(), "PREFECT_HOME": str(home / ".memvault" / "prefect"), "MEMVAULT_ENGINE": "none"}
    env.pop("PREFECT_API_URL", None)
    memvault(home, "run", "--json", env=env)
    # A hook's spool entry and live.log (a drainer is already "running": this process holds its lock).
    from memvault.live import spool

    lock = spool.DrainLock(home / ".memvault")
    assert lock.acquire()
    try:
        memvault(home, "capture", stdin=json.dumps({"transcript_path": str(src / SAMPLE.name), "session_id": "s"}))
        memvault(home, "capture", stdin="not json")  # goes to live.log
    finally:
        lock.release()
    memvault(home, "recall", "tidepool", "--json")  # the access log
    made = {p.name for p in home.rglob("*")}
    assert {"ledger.duckdb", "live.log", "access.log", "prefect.db"} <= made, sorted(made)
    assert spool.pending(home / ".memvault") == 1 and list((home / ".memvault" / "runs").glob("*.json"))
    objects = [p for p in (home / ".git" / "objects").rglob("*") if p.is_file()]
    assert objects and all(stat.S_IMODE(p.stat().st_mode) == 0o400 for p in objects if len(p.parent.name) == 2)
    assert wide_paths(home) == [], modes(wide_paths(home), home)


def test_status_names_a_wide_home_and_init_fix_permissions_narrows_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    cli("--home", str(home), "init")
    # An older home: made before this release, or copied with a wide umask.
    os.chmod(home, 0o755)
    os.chmod(home / ".memvault", 0o755)
    os.chmod(home / "memvault.toml", 0o644)
    for obj in (home / ".git" / "objects").rglob("*"):
        os.chmod(obj, 0o755 if obj.is_dir() else 0o444)
    data = json.loads(cli("--home", str(home), "status", "--json").stdout)
    warning = next(w for w in data["warnings"] if "readable by other accounts" in w)
    assert "--fix-permissions" in warning and f"{home} is 755" in warning

    out = cli("--home", str(home), "init", "--fix-permissions", "--json")
    assert out.exit_code == 0 and json.loads(out.stdout)["narrowed"] >= 4
    assert wide_paths(home) == []
    assert stat.S_IMODE(home.stat().st_mode) == 0o700 and stat.S_IMODE((home / "memvault.toml").stat().st_mode) == 0o600
    assert not any("readable by other accounts" in w
                   for w in json.loads(cli("--home", str(home), "status", "--json").stdout)["warnings"])
    # git keeps the repository owner-only from now on, whoever commits with whatever umask.
    config = (home / ".git" / "config").read_text()
    assert "sharedRepository = 0600" in config or "sharedrepository = 0600" in config
