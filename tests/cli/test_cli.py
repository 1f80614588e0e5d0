"""The CLI contract: JSON shapes, exit codes, and errors that say what to do."""

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from memvault.cli import app
from tests.helpers import SAMPLES
from tests.helpers import cli as invoke

runner = CliRunner()


def test_missing_home_says_run_init(tmp_path: Path) -> None:
    result = invoke("--home", str(tmp_path / "nope"), "status")
    assert result.exit_code == 1
    assert f"no memory home at {tmp_path / 'nope'}" in result.output and "memvault init" in result.output
    result = invoke("--home", str(tmp_path / "nope"), "status", "--json")
    assert result.exit_code == 1 and "no memory home" in json.loads(result.output)["error"]


def test_misuse_exits_2(home: Path) -> None:
    assert invoke("--home", str(home), "run", "--bogus").exit_code == 2
    result = invoke("--home", str(home), "run", "--only", "nonsense")
    assert result.exit_code == 2 and "'nonsense' is not one of 'ingest'" in " ".join(result.output.split())
    result = invoke("--home", str(home), "run", "--engine", "gpt-9")
    assert result.exit_code == 2 and "'gpt-9' is not one of 'auto'" in " ".join(result.output.split())
    result = invoke("--home", str(home), "run", "--from", "index", "--until", "ingest")
    assert result.exit_code == 2 and "--from index comes after --until ingest" in result.output


def test_misuse_under_json_is_a_json_error(home: Path) -> None:
    for args, said in ((["run", "--only", "nonsense", "--json"], "'nonsense' is not one of 'ingest'"),
                       (["recall", "x", "--max-nodes", "0", "--json"], "--max-nodes"),
                       (["search", "--json"], "Missing argument 'QUERY'"),
                       (["status", "--json", "--bogus"], "No such option: --bogus")):
        result = invoke("--home", str(home), *args)
        assert result.exit_code == 2, args
        error = json.loads(result.stdout)
        assert error["type"] == "UsageError" and said in error["error"], args
    # After `--`, `--json` is a value, not the flag: the usual usage error.
    result = invoke("--home", str(home), "read", "--", "--json", "--section")
    assert result.exit_code in (1, 2) and not result.stdout.lstrip().startswith("{")


def test_articles_of_a_new_home_say_how_to_get_some(home: Path) -> None:
    result = invoke("--home", str(home), "articles")
    assert result.exit_code == 0 and "no articles yet" in result.output and "memvault run" in result.output
    assert json.loads(invoke("--home", str(home), "articles", "--json").output) == []


def test_links_of_an_unlinked_article_say_none(home: Path) -> None:
    from stores.vault import Vault

    vault = Vault(home)
    vault.articles_dir.mkdir(parents=True, exist_ok=True)
    (vault.articles_dir / "Alone.md").write_text("# Alone\n\nNo links here.\n", encoding="utf-8")
    result = invoke("--home", str(home), "links", "Alone")
    assert result.exit_code == 0 and result.output.splitlines() == ["out: (none)", "in: (none)"]
    assert json.loads(invoke("--home", str(home), "links", "Alone", "--json").output) == {
        "article": "Alone", "out": [], "in": []}


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
    # The article as stored: front matter (aliases for Obsidian), then its title.
    assert text.startswith("---\naliases:\n") and f"\n---\n# {title}\n" in text
    assert invoke("--home", home, "read", title.replace(" ", "_").lower()).output == text
    missing = invoke("--home", home, "read", "No Such Article")
    assert missing.exit_code == 1 and "memvault articles" in missing.output


def test_version_comes_from_package_metadata() -> None:
    from importlib.metadata import version

    result = invoke("--version")
    assert result.exit_code == 0 and result.output == f"memvault {version('memvault')}\n"


def test_every_command_answers_dash_h_with_real_metavars() -> None:
    top = invoke("-h")
    assert top.exit_code == 0 and "Usage: memvault [OPTIONS] COMMAND [ARGS]..." in top.output
    names = [c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands]
    assert len(names) >= 26
    for name in names:
        short, long = invoke(name, "-h"), invoke(name, "--help")
        assert short.exit_code == 0 and short.output == long.output, name
        usage = next(line for line in short.output.splitlines() if "Usage:" in line)
        assert f"Usage: memvault {name} [OPTIONS]" in usage and "{" not in usage, usage
        assert "<bool>" not in short.output and "<str>" not in short.output, name
    assert "Usage: memvault search [OPTIONS] QUERY" in invoke("search", "-h").output
    assert "Usage: memvault get [OPTIONS] ID..." in invoke("get", "-h").output
    assert "Usage: memvault ingest [OPTIONS] [PATH]..." in invoke("ingest", "-h").output
    assert "--at" in (schedule := invoke("schedule", "-h").output) and "HH:MM" in schedule
    run_help = invoke("run", "-h").output
    assert "--only" in run_help and "STAGE" in run_help and "ENGINE" in run_help and "DATE" in run_help


def test_cli_engine_choices_are_the_setting_s() -> None:
    from typing import get_args

    from memvault.cli.params import Engine, Stage
    from memvault.engines.settings import EngineName
    from tasks.pipeline import STAGES

    assert [e.value for e in Engine] == list(get_args(EngineName))
    assert [s.value for s in Stage] == list(STAGES)


def test_init_prints_sources_that_paste_as_valid_toml(tmp_path: Path) -> None:
    import tomllib

    fake_home = tmp_path / "user"
    (fake_home / ".claude" / "projects").mkdir(parents=True)
    (fake_home / ".codex" / "sessions").mkdir(parents=True)  # ignored: CODEX_HOME points elsewhere
    codex_home = tmp_path / "codex home"
    (codex_home / "sessions").mkdir(parents=True)
    result = runner.invoke(app, ["--home", str(tmp_path / "h"), "init"], catch_exceptions=False,
                           env={"HOME": str(fake_home), "CODEX_HOME": str(codex_home)})
    assert result.exit_code == 0, result.output
    head, _, snippet = result.output.partition("add to ")
    assert "found transcripts" in head
    pasted = tomllib.loads(snippet.split("\n", 1)[1])
    assert pasted["sources"] == [{"kind": "claude-code", "path": "~/.claude/projects"},
                                 {"kind": "codex", "path": f"{codex_home}/sessions"}]
    # And the snippet really works as memvault.toml.
    toml = tmp_path / "h" / "memvault.toml"
    toml.write_text(toml.read_text() + snippet.split("\n", 1)[1])
    from memvault.config.settings import load_settings

    assert [s.kind for s in load_settings(tmp_path / "h").sources] == ["claude-code", "codex"]
    data = json.loads(runner.invoke(app, ["--home", str(tmp_path / "h"), "init", "--json"],
                                    env={"HOME": str(fake_home), "CODEX_HOME": str(codex_home)}).output)
    assert {"kind": "codex", "path": f"{codex_home}/sessions"} in data["detected_sources"]


def test_ingest_of_a_missing_path_fails_naming_it(home: Path, tmp_path: Path) -> None:
    gone = tmp_path / "nonexistent"
    result = invoke("--home", str(home), "ingest", str(gone))
    assert result.exit_code == 1 and str(gone) in result.output and "no such file or folder" in result.output
    result = invoke("--home", str(home), "ingest", str(gone), "--json")
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert data["errors"] == [{"file": str(gone), "line": None, "error": "no such file or folder"}]
    assert data["files_seen"] == 0 and data["conversations_new"] == 0


def test_ingest_path_reads_only_that_path(home: Path, tmp_path: Path, prefect) -> None:
    shutil.copytree(SAMPLES / "chatgpt", tmp_path / "export")
    shutil.copytree(SAMPLES / "claude-code", tmp_path / "projects")
    toml = home / "memvault.toml"
    toml.write_text(toml.read_text() + f'\n[[sources]]\nkind = "claude-code"\npath = "{tmp_path / "projects"}"\n')
    gone = tmp_path / "nonexistent"
    result = invoke("--home", str(home), "ingest", str(tmp_path / "export"), str(gone), "--json")
    assert result.exit_code == 1, result.output
    data = _first_json(result.output)
    # The export's 4 conversations and nothing of the configured claude-code source; the
    # missing path is reported, the good one still ingested.
    assert data["conversations_new"] == 4
    assert data["errors"] == [{"file": str(gone), "line": None, "error": "no such file or folder"}]
    # Without a PATH the configured sources are read.
    result = invoke("--home", str(home), "ingest", "--json")
    assert result.exit_code == 0, result.output
    assert _first_json(result.output)["conversations_new"] == 7


def _first_json(output: str) -> dict:
    """The JSON document in ``output`` (Prefect may log around it when it runs in-process)."""
    return json.JSONDecoder().raw_decode(output[output.index("{"):])[0]


def test_a_broken_memvault_toml_is_one_clear_error(home: Path) -> None:
    toml = home / "memvault.toml"
    toml.write_text(toml.read_text() + "\n[recall]\nmax_nodes = 3\n")  # the template has [recall] already
    result = invoke("--home", str(home), "status")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"error: {toml}, line " in result.output and "[recall] is declared twice" in result.output
    toml.write_text(toml.read_text().replace("\n[recall]\nmax_nodes = 3\n", "") + "\n[index]\nsimilar_treshold = 0.8\n")
    result = invoke("--home", str(home), "status", "--json")
    assert result.exit_code == 1
    error = json.loads(result.output)
    assert error["type"] == "ConfigError"
    assert "unknown setting `similar_treshold` in [index] — did you mean `similar_threshold`?" in error["error"]
