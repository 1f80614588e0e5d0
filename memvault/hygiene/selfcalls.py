"""memvault's own model calls, recorded where they are made, so ingest can recognise them.

A server that logs its chats (or an assistant CLI used as an engine) may leave a transcript of
the prompts memvault sent it; ingesting that would make the wiki summarise itself. Content
cannot be trusted to say "this is memvault" (a pasted prompt or a fetched page can carry any
marker), so the engines record a digest of every exact prompt they send in the home's state
(``.memvault/self_calls.log``), and ingest drops a conversation only when one of its user
messages is, whole, such a prompt. A string inside a message never drops anything.
"""

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

from memvault.files import atomic_write_text

SELF_CALLS_FILE = "self_calls.log"
# The log keeps the newest digests only: a transcript of a call is ingested within days,
# and a few MB of hex is plenty (one nightly run makes hundreds of calls, not millions).
KEEP = 50_000


def prompt_digest(text: str) -> str:
    """Digest of a prompt as a transcript would show it (outer whitespace and line ends ignored)."""
    canonical = text.replace("\r\n", "\n").strip()
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


class SelfCallLog:
    """Append-only digests of the prompts memvault sent to a model, in one file of the home."""

    def __init__(self, path: Path, keep: int = KEEP) -> None:
        self.path = path
        self.keep = keep

    def record(self, texts: Iterable[str]) -> None:
        """Remember ``texts`` (a call's system and user prompt) as memvault's own."""
        lines = "".join(prompt_digest(t) + "\n" for t in texts if t.strip())
        if not lines:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # One short append per call; O_APPEND keeps concurrent appends whole.
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, lines.encode("ascii"))
        finally:
            os.close(fd)
        if self.path.stat().st_size > self.keep * 65 * 2:
            self._trim()

    def _trim(self) -> None:
        recent = self.path.read_text(encoding="ascii").splitlines()[-self.keep:]
        atomic_write_text(self.path, "".join(line + "\n" for line in recent), encoding="ascii")

    def digests(self) -> frozenset[str]:
        """Every recorded digest (empty when memvault has made no call yet)."""
        try:
            text = self.path.read_text(encoding="ascii", errors="replace")
        except FileNotFoundError:
            return frozenset()
        return frozenset(line for line in text.splitlines() if len(line) == 64)


def self_call_log(state_dir: Path) -> SelfCallLog:
    """The log of the home whose state folder is ``state_dir``."""
    return SelfCallLog(state_dir / SELF_CALLS_FILE)
