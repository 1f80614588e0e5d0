"""The CLI contract: JSON shapes, exit codes, and errors that say what to do."""

import json
import shutil
from pathlib import Path

from tests.helpers import SAMPLES
from tests.helpers import cli as invoke


def test_missing_home_says_run_init(tmp_path: Path) -> None:
    result = invoke("--home", str(tmp_path / "nope"), "status")
    assert result.exit_code == 1
    assert f"no memory home at {tmp_path / 'nope'}" in result.output and "memvault init" in result.output
    result = invoke("--home", str(tmp_path / "nope"), "status", "--json")
    assert result.exit_code == 1 and "no memory home" in json.loads(result.output)["error"]


def test_misuse_exits_2(home: Path) -> None:
    assert invoke("--home", str(home), "run", "--bogus").exit_code == 2
    result = invoke("--home", str(home), "run", "--only", "nonsense")
    assert result.exit_code == 2 and "unknown stage" in result.output


def test_init_json_and_idempotence(tmp_path: Path) -> None:
    first = json.loads(invoke("--home", str(tmp_path / "h"), "init", "--json").output)
    assert "Meta/Buckets.md" in first["created"] and first["committed"]
    second = json.loads(invoke("--home", str(tmp_path / "h"), "init", "--json").output)
    assert second["created"] == [] and second["committed"] is None


def test_ingest_json_shape(home: Path, tmp_path: Path, prefect) -> None:
    shutil.copytree(SAMPLES / "chatgpt", tmp_path / "export")
    result = invoke("--home", str(home), "ingest", str(tmp_path / "export"), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output[result.output.index("{"):])
    for key in ("files_seen", "conversations_new", "conversations_updated", "messages_new", "errors",
                "redactions", "skipped_types"):
        assert key in data
    assert data["conversations_new"] == 4 and data["errors"] == []


def test_read_commands_on_the_demo_home(demo_runs) -> None:
    home = str(demo_runs["home"])
    status = json.loads(invoke("--home", home, "status", "--json").output)
    assert {"home", "engine", "conversations", "messages", "chunks", "buckets", "articles", "nodes", "last_run"} <= set(status)
    assert status["conversations"] == 11 and status["articles"] >= 2 and status["nodes"] > 0
    assert status["last_run"]["run_id"] == demo_runs["second"]["run_id"]
    articles = json.loads(invoke("--home", home, "articles", "--json").output)
    assert articles and {"title", "path", "words", "citations", "updated_at"} <= set(articles[0])
    recall = json.loads(invoke("--home", home, "recall", "sourdough starter hydration", "--json").output)
    assert {"query", "block", "hits"} <= set(recall)
    assert {"id", "path", "title", "kind", "score", "text"} <= set(recall["hits"][0])
    search = json.loads(invoke("--home", home, "search", "tidepool release", "--json").output)
    assert {"id", "title", "path", "kind", "score"} <= set(search["hits"][0])
    title = articles[0]["title"]
    text = invoke("--home", home, "read", title).output
    assert text.startswith(f"# {title}")
    assert invoke("--home", home, "read", title.replace(" ", "_").lower()).output == text
    missing = invoke("--home", home, "read", "No Such Article")
    assert missing.exit_code == 1 and "memvault articles" in missing.output
