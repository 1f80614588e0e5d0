"""What the Prefect UI shows of a run, read back from a real local Prefect server (the test
harness): the final state's name and type, the flow run's name, the narrow stage-count table."""

import asyncio
import re
import shutil
from pathlib import Path
from typing import Any
from uuid import UUID

from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import FlowRun, StateType

from flows.nightly import COMPLETED_WITH_ERRORS, RunOptions, nightly
from tests.helpers import SAMPLES

NAME = re.compile(r"^nightly \d{4}-\d\d-\d\d \d\d:\d\d( · .+)?$")


def _read(flow_run_id: UUID) -> tuple[FlowRun, list[Any]]:
    async def go() -> tuple[FlowRun, list[Any]]:
        from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

        async with get_client() as client:
            run = await client.read_flow_run(flow_run_id)
            artifacts = await client.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))
        return run, artifacts

    return asyncio.run(go())


def _run(home: Path, **options: Any) -> tuple[dict[str, Any], FlowRun, list[Any]]:
    state = nightly(RunOptions(home=str(home), engine="none", **options), return_state=True)
    report = state.result()
    run, artifacts = _read(state.state_details.flow_run_id)
    return report, run, artifacts


def test_a_run_with_an_ingest_error_ends_completed_with_errors(home: Path, tmp_path: Path, prefect) -> None:
    src = tmp_path / "in" / "cc"
    shutil.copytree(SAMPLES / "claude-code" / "-Users-sam-src-homelab", src)
    (src / "broken.jsonl").write_text("this is not json\n")
    report, run, artifacts = _run(home, only=["ingest"], paths=[str(src)], configured_sources=False)
    assert report["status"] == "completed_with_errors"
    assert run.state is not None
    assert run.state.type == StateType.COMPLETED
    assert run.state.name == COMPLETED_WITH_ERRORS
    assert run.state.message and report["run_id"] in run.state.message and "1 error(s)" in run.state.message
    assert NAME.match(run.name) and run.name.endswith(" · ingest"), run.name
    table = next(a for a in artifacts if a.key == "memvault-stage-counts")
    rows = table.data if isinstance(table.data, list) else __import__("json").loads(table.data)
    assert [set(r) for r in rows] == [{"stage", "status", "seconds", "counts"}]
    assert rows[0]["stage"] == "ingest" and "errors 1" in rows[0]["counts"]
    assert "conversations_new" in rows[0]["counts"]
    # The full counts stay in the Markdown report.
    md = next(a for a in artifacts if a.key == "memvault-run-report").data
    assert "files_seen=" in md and "bytes_read=" in md


def test_a_clean_run_is_plain_completed_and_named_by_its_time(home: Path, tmp_path: Path, prefect) -> None:
    src = tmp_path / "in" / "cc"
    shutil.copytree(SAMPLES / "claude-code" / "-Users-sam-src-homelab", src)
    report, run, _ = _run(home, paths=[str(src)], configured_sources=False)
    assert report["status"] == "completed" and not report["articles_rejected"]
    assert run.state is not None and run.state.type == StateType.COMPLETED and run.state.name == "Completed"
    assert NAME.match(run.name) and "·" not in run.name, run.name


def test_rejections_and_errors_name_the_state() -> None:
    from flows.nightly import COMPLETED_WITH_REJECTIONS, final_state

    base = {"run_id": "r1", "status": "completed", "stages": {"synthesize": {"status": "completed"}},
            "articles_created": [], "articles_updated": ["A"], "articles_rejected": []}
    assert final_state(base).name == "Completed"
    rejected = {**base, "articles_rejected": [{"article": "B", "reasons": ["shrank"]}]}
    state = final_state(rejected)
    assert state.name == COMPLETED_WITH_REJECTIONS and state.is_completed()
    assert state.message == "run r1: 1 article(s) rejected; 0 created, 1 updated"
    both = {**rejected, "status": "completed_with_errors",
            "stages": {"ingest": {"status": "completed", "errors": [{"file": "x", "error": "bad"}]}}}
    assert final_state(both).name == COMPLETED_WITH_ERRORS
    assert final_state(both).message == "run r1: 1 error(s); 1 article(s) rejected; 0 created, 1 updated"


def test_a_run_refused_by_a_held_git_lock_is_a_failed_run_with_the_reason(home: Path, prefect) -> None:
    # What a scheduled run meets when a git command of the home still runs and holds the lock
    # (a lock no live git process can hold is removed instead: tests/stores/test_vault_git.py).
    import subprocess
    import time

    running = subprocess.Popen(["git", "-C", str(home), "cat-file", "--batch"], stdin=subprocess.PIPE,
                               stdout=subprocess.DEVNULL)
    try:
        time.sleep(1.5)
        (home / ".git" / "index.lock").write_text("")
        state = nightly(RunOptions(home=str(home), engine="none", configured_sources=False), return_state=True)
        run, _ = _read(state.state_details.flow_run_id)
    finally:
        running.kill()
        running.wait()
    assert state.is_failed() and run.state is not None and run.state.type == StateType.FAILED
    assert "index.lock" in (run.state.message or "") + str(state.result(raise_on_failure=False))
