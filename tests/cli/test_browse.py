"""`memvault conversations` and `memvault show` on a real home: the demo nightly run's ledger,
read back and compared with the sample transcript it was ingested from."""

import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from memvault.ids import conversation_id
from memvault.models import Conversation, Message
from tests.helpers import SAMPLES, cli

SAMPLE = SAMPLES / "claude-code" / "-Users-sam-src-homelab" / "7fdbc14b-77ae-5353-ac77-7677f93fa123.jsonl"


def sample_turns(path: Path) -> tuple[list[tuple[str, str]], int]:
    """(role, text) of the sample's user and assistant text, in file order, and its tool calls."""
    turns, tools = [], 0
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        message = entry.get("message") or {}
        content = message.get("content")
        if isinstance(content, str):
            turns.append((message["role"], content))
            continue
        for block in content or []:
            if block.get("type") == "text":
                turns.append((message["role"], block["text"]))
            tools += block.get("type") == "tool_use"
    return turns, tools


def test_conversations_json_and_show_round_trip_a_sample(demo_runs) -> None:
    home = str(demo_runs["home"])
    listed = json.loads(cli("--home", home, "conversations", "--json", "--limit", "0").output)
    dates = [c["date"] for c in listed]
    assert len(listed) >= 5 and dates == sorted(dates, reverse=True)  # newest first
    cid = conversation_id("claude-code", SAMPLE.stem)
    [entry] = [c for c in listed if c["id"] == cid]
    assert entry["source"] == "claude-code" and entry["project"] == "/Users/sam/src/homelab"
    assert entry["ref"] == f"conv:{entry['short_id']}" and cid.startswith(entry["short_id"])

    shown = json.loads(cli("--home", home, "show", entry["ref"], "--json").output)
    assert {k: shown[k] for k in ("id", "title", "source", "project", "date")} == \
        {k: entry[k] for k in ("id", "title", "source", "project", "date")}
    assert shown["message_count"] == entry["messages"] == len(shown["messages"])
    turns, tools = sample_turns(SAMPLE)
    talk = [(m["role"], m["text"]) for m in shown["messages"] if m["kind"] == "text"]
    assert talk == turns
    assert sum(m["kind"] == "tool_call" for m in shown["messages"]) == tools > 0
    first = datetime.fromisoformat(shown["messages"][0]["timestamp"])
    assert first == datetime(2026, 10, 5, 8, 41, 17, tzinfo=timezone.utc)

    # The same conversation by its bare short id and by its full id.
    for ref in (entry["short_id"], cid):
        assert json.loads(cli("--home", home, "show", ref, "--json").output)["id"] == cid


def test_show_prints_readable_markdown_with_tools_folded(demo_runs) -> None:
    home = str(demo_runs["home"])
    cid = conversation_id("claude-code", SAMPLE.stem)
    shown = json.loads(cli("--home", home, "show", cid, "--json").output)
    result = cli("--home", home, "show", f"conv:{cid[:12]}")
    assert result.exit_code == 0
    text = result.output
    assert text.startswith(f"# {shown['title']}\n") and "- source: claude-code" in text
    assert "- project: /Users/sam/src/homelab" in text and "## user · 2026-10-05 08:41 UTC" in text
    calls = [m for m in shown["messages"] if m["kind"] == "tool_call"]
    folded = [line for line in text.splitlines() if line.startswith("- tool call: ")]
    assert len(folded) == len(calls) and "```" not in text  # one line each, nothing expanded
    long_result = next(m for m in shown["messages"] if m["kind"] == "tool_result" and "\n" in m["text"].strip())
    assert long_result["text"] not in text

    full = cli("--home", home, "show", cid, "--full").output
    assert long_result["text"].rstrip() in full and "## tool" in full and "```" in full
    for role, turn in sample_turns(SAMPLE)[0]:
        assert turn in text and turn in full


def test_conversations_filters_and_text(demo_runs) -> None:
    home = str(demo_runs["home"])

    def listed(*args: str) -> list[dict]:
        result = cli("--home", home, "conversations", "--json", *args)
        assert result.exit_code == 0, result.output
        return json.loads(result.output)

    everything = listed("--limit", "0")
    homelab = listed("--project", "homelab")
    assert homelab and {c["project"] for c in homelab} == {"/Users/sam/src/homelab"}
    assert listed("--project", "/Users/sam/src/homelab/") == homelab
    chatgpt = listed("--source", "chatgpt")
    assert chatgpt and {c["source"] for c in chatgpt} == {"chatgpt"} and len(chatgpt) < len(everything)
    middle = sorted(c["date"] for c in everything)[len(everything) // 2]
    since = listed("--since", middle[:10], "--limit", "0")
    assert since and all(c["date"][:10] >= middle[:10] for c in since) and len(since) < len(everything)
    assert listed("--since", "2999-01-01") == []
    assert listed("--limit", "2") == everything[:2]

    text = cli("--home", home, "conversations", "--limit", "2").output.splitlines()
    assert len(text) == 3 and text[0].startswith(everything[0]["ref"]) and "more than 2" in text[2]
    assert str(everything[0]["messages"]) in text[0] and everything[0]["title"][:40] in text[0]

    bad = cli("--home", home, "conversations", "--source", "slack")
    assert bad.exit_code == 2 and "unknown source 'slack'" in bad.output
    assert cli("--home", home, "conversations", "--since", "last tuesday").exit_code == 2


def test_show_names_unknown_and_malformed_ids(demo_runs) -> None:
    home = str(demo_runs["home"])
    known = json.loads(cli("--home", home, "conversations", "--json").output)[0]["ref"]
    missing = cli("--home", home, "show", known, "conv:00000000", "deadbeef99")
    assert missing.exit_code == 1
    assert "conv:00000000" in missing.output and "deadbeef99" in missing.output and known not in missing.output
    as_json = cli("--home", home, "show", "conv:00000000", "--json")
    assert as_json.exit_code == 1 and json.loads(as_json.output)["type"] == "NotFoundError"
    assert cli("--home", home, "show", "conv:xyz").exit_code == 2
    two = json.loads(cli("--home", home, "show", known, known, "--json").output)
    assert [c["ref"] for c in two] == [known, known]


def _colliding_pair() -> tuple[str, str]:
    """Two native ids whose conversation keys share their first 4 hex digits (a birthday search)."""
    seen: dict[str, str] = {}
    for i in range(200_000):
        native = f"session-{i}"
        prefix = conversation_id("note", native)[:4]
        if prefix in seen:
            return seen[prefix], native
        seen[prefix] = native
    raise AssertionError("no 4-hex collision found")


def test_an_ambiguous_prefix_lists_the_candidates(home: Path) -> None:
    from memvault.config.settings import load_settings
    from stores.ledger import Ledger

    a, b = _colliding_pair()
    convs = [Conversation(source="note", native_id=n, title=f"note {n}",
                          messages=[Message(native_id="1", role="user", text=f"text of {n}")]) for n in (a, b)]
    with Ledger.open(load_settings(home)) as ledger:
        ledger.upsert_conversations(convs)
    prefix = convs[0].id[:4]
    result = cli("--home", str(home), "show", prefix)
    assert result.exit_code == 1 and "matches 2 conversations" in result.output
    assert "conv:" + convs[0].id[:8] in result.output and "conv:" + convs[1].id[:8] in result.output
    ok = json.loads(cli("--home", str(home), "show", convs[1].id[:8], "--json").output)
    assert ok["title"] == f"note {b}" and [m["text"] for m in ok["messages"]] == [f"text of {b}"]


def test_a_home_with_nothing_ingested(home: Path) -> None:
    result = cli("--home", str(home), "conversations")
    assert result.exit_code == 0 and "no conversations yet" in result.output
    assert json.loads(cli("--home", str(home), "conversations", "--json").output) == []
    assert cli("--home", str(home), "show", "conv:1a2b3c4d").exit_code == 1


@pytest.mark.slow
def test_a_busy_ledger_is_a_clear_error(demo_copy: Path) -> None:
    # Another process holds the ledger read-write, as a nightly run does.
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, duckdb; con = duckdb.connect(sys.argv[1]); print('ready', flush=True); "
         "sys.stdin.read()", str(demo_copy / ".memvault" / "ledger.duckdb")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        result = cli("--home", str(demo_copy), "conversations")
        assert result.exit_code == 1 and "open in another process" in result.output
        as_json = cli("--home", str(demo_copy), "show", "conv:1a2b3c4d", "--json")
        assert json.loads(as_json.output)["type"] == "LedgerBusy"
    finally:
        holder.communicate("", timeout=30)
