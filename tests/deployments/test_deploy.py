"""The deployments of deployments/prefect.yaml, registered against a REAL local Prefect server
(started here with its own PREFECT_HOME) and read back through the client; and the run-report
artifacts a real nightly flow run leaves behind."""

import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest

from memvault.ops.deployment_files import deployment_specs, install_root, project
from tests.helpers import free_port, stop

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def prefect_server(tmp_path_factory):
    """`prefect server start` on a free port; bounded wait on /api/health; killed in teardown."""
    root = tmp_path_factory.mktemp("prefect-server")
    port = free_port()
    env = {**os.environ, "PREFECT_HOME": str(root), "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1",
           "PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "5"}
    env.pop("PREFECT_API_URL", None)
    log = open(root / "server.log", "wb")
    proc = subprocess.Popen([str(Path(sys.executable).parent / "prefect"), "server", "start", "--host", "127.0.0.1",
                             "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/api"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, (root / "server.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "prefect server did not start within 180 s"
            time.sleep(1)
        yield url
    finally:
        stop(proc, timeout=30)
        log.close()


def test_prefect_yaml_names_both_deployments() -> None:
    specs = deployment_specs()
    assert set(specs) == {"nightly", "maintenance", "recall"}
    assert specs["recall"]["entrypoint"] == "flows/recall.py:recall" and not specs["recall"]["schedules"]
    assert specs["nightly"]["entrypoint"] == "flows/nightly.py:nightly"
    assert specs["maintenance"]["entrypoint"] == "flows/maintenance.py:maintenance"
    assert all(s["work_pool"] == {"name": "memvault", "type": "process"} for s in specs.values())
    assert project()["prefect-version"] == "3.9.1"
    assert (install_root() / "flows" / "nightly.py").is_file()


def test_deploy_registers_from_any_directory(prefect_server: str, home: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from deployments.deploy import register
    from memvault.config.settings import load_settings
    from memvault.ops.status import gather_status

    monkeypatch.chdir(tmp_path)  # the current directory must not matter
    monkeypatch.setenv("PREFECT_API_URL", prefect_server)
    monkeypatch.setenv("MEMVAULT_SCHEDULE__TIMEZONE", "Europe/Paris")
    settings = load_settings(home)
    with temporary_settings({PREFECT_API_URL: prefect_server}):
        result = register(settings, at="02:30")
        again = register(settings, at="02:30")  # idempotent: same deployments updated in place
        assert [d["id"] for d in again["deployments"]] == [d["id"] for d in result["deployments"]]
        with get_client(sync_client=True) as client:
            pool = client.read_work_pool("memvault")
            nightly = client.read_deployment_by_name("nightly/nightly")
            maintenance = client.read_deployment_by_name("maintenance/maintenance")
            recall = client.read_deployment_by_name("recall/recall")
    assert pool.type == "process"
    assert recall.entrypoint == "flows/recall.py:recall" and recall.schedules == []
    root = str(install_root())
    for dep, entry in ((nightly, "flows/nightly.py:nightly"), (maintenance, "flows/maintenance.py:maintenance")):
        assert dep.entrypoint == entry
        assert dep.work_pool_name == "memvault"
        assert dep.pull_steps == [{"prefect.deployments.steps.set_working_directory": {"directory": root}}]
        assert dep.parameters == {"options": {"home": str(settings.home)}}
        assert dep.enforce_parameter_schema
        assert "options" in dep.parameter_openapi_schema["properties"]
        assert [(s.schedule.cron, s.schedule.timezone) for s in dep.schedules] == \
            [("30 2 * * *" if dep.name == "nightly" else "30 4 * * 0", "Europe/Paris")]

    # The server's scheduler (every 5 s here) creates the scheduled runs; wait for the first one.
    deadline = time.monotonic() + 120
    status = gather_status(settings)
    while status["next_run"]["next_run"] is None and time.monotonic() < deadline:
        time.sleep(2)
        status = gather_status(settings)
    assert status["next_run"]["deployment"] == "nightly/nightly"
    next_run = datetime.fromisoformat(status["next_run"]["next_run"].replace("Z", "+00:00"))
    assert next_run.astimezone(ZoneInfo("Europe/Paris")).strftime("%H:%M") == "02:30"

    from deployments.deploy import remove_schedules

    with temporary_settings({PREFECT_API_URL: prefect_server}):
        assert sorted(remove_schedules()) == ["maintenance/maintenance", "nightly/nightly", "recall/recall"]
        with get_client(sync_client=True) as client:
            assert client.read_deployment_by_name("nightly/nightly").schedules == []


def test_deploy_without_api_url_says_what_to_do(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from memvault.cli import app

    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: None}):
        result = CliRunner().invoke(app, ["--home", str(home), "deploy"])
    assert result.exit_code == 1
    assert "PREFECT_API_URL is not set" in result.output


def test_run_report_artifacts_exist_after_a_flow_run(demo_runs) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with get_client(sync_client=True) as client:
        found = {}
        for key in ("memvault-run-report", "memvault-stage-counts", "memvault-run-progress"):
            found[key] = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])))
    report = found["memvault-run-report"]
    assert len(report) >= 2 and report[0].type == "markdown"
    run_ids = {demo_runs["first"]["run_id"], demo_runs["second"]["run_id"]}
    assert any(rid in (a.data or "") for a in report for rid in run_ids)
    assert found["memvault-stage-counts"][0].type == "table"
    progress = found["memvault-run-progress"]
    assert progress and all(a.type == "progress" for a in progress)
    assert any(float(a.data) == 100.0 for a in progress)
