"""Fixtures for the ingest tests: a real ledger in a fresh home, and transcript builders."""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

FORMATS = Path(__file__).resolve().parents[1] / "fixtures" / "formats"


@pytest.fixture
def ingest_env(home: Path) -> Iterator[tuple[Any, Any]]:
    """(ledger, settings) of a fresh memory home; the ledger is closed afterwards."""
    from memvault.settings import load_settings
    from stores.ledger import Ledger

    settings = load_settings(home)
    ledger = Ledger(settings.ledger_path)
    yield ledger, settings
    ledger.close()


def cc_line(session: str, n: int, role: str, text: str, parent: str | None = None) -> str:
    """One Claude Code transcript line (user or assistant), newline-terminated."""
    content: Any = text if role == "user" else [{"type": "text", "text": text}]
    message = {"role": role, "content": content}
    if role == "assistant":
        message["id"] = f"msg_{session}_{n}"
    obj = {"type": role, "sessionId": session, "uuid": f"{session}-u{n}", "parentUuid": parent,
           "timestamp": f"2025-01-01T10:{n // 60 % 60:02d}:{n % 60:02d}Z", "cwd": "/w", "message": message}
    return json.dumps(obj) + "\n"


def cc_session(session: str, texts: list[str]) -> str:
    """A linear Claude Code session alternating user and assistant lines."""
    lines, parent = [], None
    for n, text in enumerate(texts):
        lines.append(cc_line(session, n, "user" if n % 2 == 0 else "assistant", text, parent))
        parent = f"{session}-u{n}"
    return "".join(lines)
