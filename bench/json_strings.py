"""Huge JSON strings: parse time before and after the cut-first pass (issue 26 §3).

The data is the campaign's reproduction, built in memory: one conversation whose single
message is an N MB string (printable text with newlines, which JSON escapes), as a ChatGPT
export (read by ijson, streamed) and as a Claude Code JSONL line (orjson). "before" sets the
string cap out of reach (nothing is cut, as on main); "after" uses the default cap
(`ingest.max_string_bytes`, 1 MiB). Times are wall seconds of one parse each, in one run.

    .venv/bin/python bench/json_strings.py [--sizes 1 20 40]
"""

import argparse
import json
import tempfile
from typing import Any
import time
from pathlib import Path

from memvault.sources import parse_file
from memvault.sources.caps import Caps, limits


def _text(mb: int) -> str:
    line = "2026-11-03 02:00:01 backup: copied 1482 files to /volume1/backup (ok)\n"
    return (line * ((mb << 20) // len(line) + 1))[: mb << 20]


def _chatgpt(text: str) -> str:
    node: dict[str, Any] = {"id": "a", "message": {"id": "a", "author": {"role": "user"}, "create_time": 1.7e9,
                                   "content": {"content_type": "text", "parts": [text]}}, "parent": None,
            "children": []}
    return json.dumps([{"id": "c1", "title": "log", "create_time": 1.7e9, "update_time": 1.7e9,
                        "mapping": {"a": node}, "current_node": "a"}])


def _claude_code(text: str) -> str:
    return json.dumps({"type": "user", "sessionId": "s", "uuid": "u1", "parentUuid": None, "cwd": "/w",
                       "timestamp": "2026-11-03T02:00:00Z", "message": {"role": "user", "content": text}}) + "\n"


def _time(path: Path, kind: str, caps: Caps) -> tuple[float, int]:
    with limits(caps):
        t0 = time.perf_counter()
        result = parse_file(path, kind)  # type: ignore[arg-type]
        seconds = time.perf_counter() - t0
    return seconds, max((len(m.text) for c in result.conversations for m in c.messages), default=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 20, 40], help="string sizes in MB")
    args = parser.parse_args()
    print("| format | string | before (s) | after (s) | stored chars after |")
    print("|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for mb in args.sizes:
            text = _text(mb)
            for kind, build, name in (("chatgpt", _chatgpt, "conversations.json"),
                                      ("claude-code", _claude_code, "s.jsonl")):
                path = Path(tmp) / name
                path.write_text(build(text))
                before, _ = _time(path, kind, Caps(string_bytes=1 << 40))
                after, stored = _time(path, kind, Caps())
                print(f"| {kind} | {mb} MB | {before:.2f} | {after:.2f} | {stored:,} |", flush=True)


if __name__ == "__main__":
    main()
