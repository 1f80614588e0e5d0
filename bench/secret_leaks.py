"""Held-out secret leak check: plant credential forms everywhere text enters, count what survives.

    .venv/bin/python bench/secret_leaks.py [--json] [--keep DIR]

Data: the held-out forms of ``tests/secret_corpus.py`` (``held_out``: 28 forms written after
the rules and not used to tune them; every value made up and drawn fresh per planted copy, so a
leak names its copy). They are written by us: this measures coverage of the forms #26 lists in
contexts the rules were not fitted on, not the rate on real transcripts (no public set of real
leaked credentials may be used).

Each form is planted by nine vehicles, each with its own value: a Claude Code, a Codex, a pi
transcript and a ChatGPT export (the form in a user message, an assistant reply or a tool
output, and the export's title); a transcript announced by a `memvault capture` hook (real
hook process, real drainer); a note's text and a note's `--project` (``add_note``, what `note`
and MCP `remember` call); and two malformed hook payloads (the form in a field of a payload
with no transcript path, and as non-JSON text). Then a real nightly `memvault run` (engine
none: ingest, chunk, synthesize, index, commit).

Places searched for each copy's value (raw, JSON-escaped and doubly escaped; multi-line values
by each line of 12+ characters): every string of the ledger, every row of the node index, the
output of `show` for every conversation, the output of `recall` and `search` for the copy's
topic word, the vault's files and every git object, live.log, and the other files under
.memvault (spool, run reports) and the Prefect home.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.secret_corpus import Form, held_out  # noqa: E402
# The same readers as the end-to-end leak test: every string of the ledger and of the index.
from tests.stages.test_ingest_secret_corpus import _index_strings, _ledger_strings  # noqa: E402

FORMATS = ("claude-code", "codex", "pi", "chatgpt")
VEHICLES = (*FORMATS, "capture", "note-text", "note-project", "bad-payload-field", "bad-payload-text")
PLACES = ("ledger", "index", "show", "recall/search", "vault+git", "live.log", "other .memvault", "prefect home")
MEMVAULT = str(Path(sys.executable).parent / "memvault")


def topic(i: int) -> str:
    """A word only form ``i``'s copies hold: the recall/search query that should find them."""
    return f"zorblat{i:02d}"


def cc_lines(sid: str, texts: list[tuple[str, str]]) -> str:
    out, parent = [], None
    for n, (role, text) in enumerate(texts):
        uid = f"{sid}-{n}"
        out.append(json.dumps({"type": role, "sessionId": sid, "uuid": uid, "parentUuid": parent, "cwd": "/w",
                               "timestamp": f"2025-03-01T10:00:{n:02d}Z", "message": {"role": role, "content": text}}))
        parent = uid
    return "\n".join(out) + "\n"


def write_formats(src: Path, copies: dict[str, list[Form]]) -> None:
    """One conversation per form in each of the four formats."""
    for name in FORMATS:
        (src / name).mkdir(parents=True)
    ts = "2025-03-02T10:00:00Z"
    gpt = []
    for i, (cc, cx, pi, ch) in enumerate(zip(*(copies[f] for f in FORMATS))):
        t = topic(i)
        (src / "claude-code" / f"cc-{i}.jsonl").write_text(
            cc_lines(f"cc-{i}", [("user", f"{t}: {cc.text}"), ("assistant", f"Noted the {t} settings.")]))
        lines = [{"type": "session_meta", "payload": {"id": f"codex-{i}", "cwd": "/w", "timestamp": ts}},
                 {"type": "event_msg", "payload": {"type": "user_message", "message": f"show the {t} config"}},
                 {"type": "response_item", "payload": {"type": "function_call", "name": "shell", "call_id": f"c{i}",
                                                       "arguments": json.dumps({"command": ["bash", "-lc", "cat cfg"]})}},
                 {"type": "response_item", "payload": {"type": "function_call_output", "call_id": f"c{i}",
                                                       "output": json.dumps({"output": f"{t}\n{cx.text}\n"})}},
                 {"type": "event_msg", "payload": {"type": "agent_message", "message": f"The {t} config is shown."}}]
        (src / "codex" / f"rollout-2025-03-02T10-00-00-codex-{i}.jsonl").write_text(
            "".join(json.dumps({"timestamp": ts, **x}) + "\n" for x in lines))
        pl: list[dict[str, Any]] = [
            {"type": "session", "version": 3, "id": f"pi-{i}", "cwd": "/w"},
            {"type": "message", "id": "a", "parentId": None, "message": {"role": "user", "content": [
                {"type": "text", "text": f"what did we set for {t}?"}]}},
            {"type": "message", "id": "b", "parentId": "a", "message": {"role": "assistant", "content": [
                {"type": "text", "text": f"For {t} we set:\n{pi.text}"}]}}]
        (src / "pi" / f"pi-{i}.jsonl").write_text(
            "".join(json.dumps({"timestamp": "2025-03-03T10:00:00.000Z", **x}) + "\n" for x in pl))
        mapping = {
            f"g{i}-0": {"id": f"g{i}-0", "parent": None, "children": [f"g{i}-1"], "message": {
                "id": f"g{i}-0", "author": {"role": "user"}, "create_time": 1740000000,
                "content": {"content_type": "text", "parts": [f"{t} — keep this: {ch.text}"]}, "metadata": {}}},
            f"g{i}-1": {"id": f"g{i}-1", "parent": f"g{i}-0", "children": [], "message": {
                "id": f"g{i}-1", "author": {"role": "assistant"}, "create_time": 1740000001,
                "content": {"content_type": "text", "parts": [f"Kept the {t} value."]}, "metadata": {}}}}
        gpt.append({"conversation_id": f"gpt-{i}", "title": f"{t} {ch.text}", "create_time": 1740000000,
                    "update_time": 1740000100, "mapping": mapping, "current_node": f"g{i}-1"})
    (src / "chatgpt" / "conversations.json").write_text(json.dumps(gpt))


def hook(home: Path, raw: str, env: dict[str, str]) -> None:
    subprocess.run([MEMVAULT, "--home", str(home), "capture"], input=raw, text=True, capture_output=True,
                   timeout=60, env=env, check=True)


def plant_live(home: Path, tmp: Path, copies: dict[str, list[Form]], env: dict[str, str]) -> None:
    """Notes (in process: the function `note` and MCP `remember` call), hook captures (real hook
    processes and the drainer they start), malformed payloads."""
    from memvault.live import spool
    from memvault.embeddings.select import embedder_for
    from memvault.ops.capture import capture
    from memvault.ops.note import add_note
    from memvault.config.settings import load_settings

    settings = load_settings(home)
    embedder = embedder_for(settings)
    for i, (text, project) in enumerate(zip(copies["note-text"], copies["note-project"])):
        add_note(settings, f"{topic(i)} remember: {text.text}", title=f"{topic(i)} note", embedder=embedder)
        add_note(settings, f"{topic(i)} lives in a project", project=project.text, embedder=embedder)
    folder = tmp / "captured"
    folder.mkdir()
    for i, form in enumerate(copies["capture"]):
        path = folder / f"cap-{i}.jsonl"
        path.write_text(cc_lines(f"cap-{i}", [("user", f"{topic(i)} for the capture: {form.text}"),
                                              ("assistant", f"Captured {topic(i)}.")]))
        hook(home, json.dumps({"session_id": f"cap-{i}", "transcript_path": str(path), "cwd": "/w",
                               "hook_event_name": "Stop"}), env)
    deadline = time.monotonic() + 600
    while spool.pending(home / ".memvault") and time.monotonic() < deadline:
        time.sleep(1)
    for field, text in zip(copies["bad-payload-field"], copies["bad-payload-text"]):
        capture(home, json.dumps({"session_id": "s", "hook_event_name": field.text}), spawn=False)
        capture(home, text.text, spawn=False)


def git_and_vault(home: Path) -> str:
    out = [subprocess.run(["git", "log", "-p", "--all"], cwd=home, capture_output=True).stdout.decode(errors="replace")]
    for p in home.rglob("*"):
        if not p.is_file() or ".memvault" in p.parts:
            continue
        raw = p.read_bytes()
        if ".git" in p.parts and len(p.parent.name) == 2 and p.parent.parent.name == "objects":
            raw = zlib.decompress(raw)
        out.append(raw.decode(errors="replace"))
    return "\n".join(out)


def files_text(root: Path, skip: tuple[str, ...] = ()) -> str:
    if not root.is_dir():
        return ""
    return "\n".join(p.read_bytes().decode(errors="replace") for p in root.rglob("*")
                     if p.is_file() and not any(s in p.parts or p.name == s for s in skip))


def cli_out(*args: str) -> str:
    from typer.testing import CliRunner

    from memvault.cli import app

    return CliRunner().invoke(app, list(args)).output


def pieces(needle: str) -> list[str]:
    """What counts as a copy of ``needle``: each of its lines of 12+ characters (all of it when
    it is one line), raw and JSON-escaped once and twice."""
    parts = [line for line in needle.splitlines() if len(line) >= 12] or [needle]
    out = set()
    for part in parts:
        once = json.dumps(part)[1:-1]
        out |= {part, once, json.dumps(once)[1:-1]}
    return sorted(out)


def measure(home: Path, prefect_home: Path, copies: dict[str, list[Form]]) -> dict[str, Any]:
    log = home / ".memvault" / "live.log"
    texts = {"ledger": _ledger_strings(home / ".memvault" / "ledger.duckdb").decode(errors="replace"),
             "index": _index_strings(home / ".memvault" / "nodes.lance").decode(errors="replace"),
             "vault+git": git_and_vault(home),
             "live.log": log.read_text(errors="replace") if log.exists() else "",
             "other .memvault": files_text(home / ".memvault", ("live.log", "ledger.duckdb", "nodes.lance")),
             "prefect home": files_text(prefect_home)}
    refs = [c["ref"] for c in json.loads(cli_out("--home", str(home), "conversations", "--json", "--limit", "0"))]
    texts["show"] = cli_out("--home", str(home), "show", *refs, "--full")
    found = []
    for i in range(len(copies[VEHICLES[0]])):
        found.append(cli_out("--home", str(home), "recall", f"{topic(i)} settings value", "--max-nodes", "12")
                     + cli_out("--home", str(home), "search", f"{topic(i)}", "--limit", "20"))
    texts["recall/search"] = "\n".join(found)
    table: dict[str, dict[str, int]] = {p: {"leaked": 0, "planted": 0} for p in PLACES}
    leaks: dict[str, list[str]] = {p: [] for p in PLACES}
    for vehicle, forms in copies.items():
        for n, form in enumerate(forms):
            for place in PLACES:
                table[place]["planted"] += 1
                if any(piece in texts[place] for piece in pieces(form.needle)):
                    table[place]["leaked"] += 1
                    leaks[place].append(f"{vehicle}:{form.kind}#{n}")
    # Not vacuous: the places hold the planted conversations' text (their topic words).
    for place in PLACES:
        table[place]["topics_seen"] = sum(topic(i) in texts[place] for i in range(len(copies[VEHICLES[0]])))
    anywhere = sum(any(any(pc in texts[p] for pc in pieces(f.needle)) for p in PLACES)
                   for forms in copies.values() for f in forms)
    return {"forms": len(copies[VEHICLES[0]]), "copies": sum(map(len, copies.values())), "leaked_anywhere": anywhere,
            "places": table, "leaks": {p: sorted(set(v)) for p, v in leaks.items() if v},
            "conversations_shown": len(refs)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", type=Path, help="Work in this folder and keep it (default: a temporary one)")
    parser.add_argument("--measure", type=Path, metavar="DIR", help="Only measure a folder an earlier --keep run left")
    args = parser.parse_args()
    tmp = args.measure or args.keep or Path(tempfile.mkdtemp(prefix="secret-leaks-"))
    tmp.mkdir(parents=True, exist_ok=True)
    home, src, prefect_home = tmp / "home", tmp / "src", tmp / "prefect"
    copies = {v: held_out(n) for n, v in enumerate(VEHICLES)}
    if args.measure:
        report(measure(home, prefect_home, copies), args.json)
        return
    env = {**os.environ, "MEMVAULT_HOME": str(home), "PREFECT_HOME": str(prefect_home), "MEMVAULT_ENGINE": "none",
           "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    os.environ.update({k: env[k] for k in ("PREFECT_HOME", "MEMVAULT_ENGINE")})
    write_formats(src, copies)
    subprocess.run([MEMVAULT, "--home", str(home), "init"], env=env, check=True, capture_output=True)
    with open(home / "memvault.toml", "a") as fh:
        for kind in FORMATS:
            fh.write(f'\n[[sources]]\nkind = "{kind}"\npath = "{src / kind}"\n')
    start = time.monotonic()
    plant_live(home, tmp, copies, env)
    run = subprocess.run([MEMVAULT, "--home", str(home), "run", "--json"], env=env, capture_output=True, text=True)
    if run.returncode:
        sys.exit(f"memvault run failed: {run.stdout[-2000:]} {run.stderr[-2000:]}")
    result = measure(home, prefect_home, copies)
    result["seconds"] = round(time.monotonic() - start, 1)
    report(result, args.json)


def report(result: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['forms']} held-out forms × {len(VEHICLES)} vehicles = {result['copies']} planted copies; "
          f"{result['leaked_anywhere']} leaked somewhere; {result['conversations_shown']} conversations shown")
    print(f"{'place':<18}{'leaked/planted':>16}{'topics seen':>13}")
    for place, row in result["places"].items():
        print(f"{place:<18}{row['leaked']:>8}/{row['planted']:<7}{row['topics_seen']:>10}/{result['forms']}")
    for place, what in result["leaks"].items():
        print(f"  {place}: {', '.join(what)}")


if __name__ == "__main__":
    main()
