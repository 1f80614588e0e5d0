"""Talk pages: an article's dated notes (what a run dropped or refused, and why)."""

from datetime import datetime, timezone


def talk_note(existing: str | None, title: str, run_id: str, lines: list[str], what: str = "normalize") -> str:
    """``existing`` Talk page (or a new one) with a dated section listing ``lines``."""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    head = existing.rstrip("\n") + "\n" if existing else f"# Talk: {title}\n"
    body = "\n".join(f"- {line}" for line in lines)
    return f"{head}\n## {stamp} — {what} (run {run_id})\n\n{body}\n"
