"""A server's shared service: a recall does not wait for a drain that holds the ledger.

The drain is the server's real drain loop over a real spool entry, stopped inside its index
write (its embedder waits at a gate), so it holds the writer lock and the ledger open for
writing while the recall runs; the recall must finish before the gate opens.
"""

import threading
from pathlib import Path
from typing import Any

import numpy as np

from memvault.live import spool
from memvault.lock import holder
from memvault.ops.conversations import list_conversations
from memvault.ops.memory import MemoryService
from memvault.ops.note import add_note, make_note
from memvault.servers import SharedService, drain_loop
from memvault.config.settings import load_settings

WAIT_S = 120.0  # a failure detector on a loaded machine, not a latency bound


class GatedEmbedder:
    """The real embedder, except that embedding the spooled note waits until ``gate`` opens."""

    def __init__(self, inner: Any, word: str) -> None:
        self.inner, self.word = inner, word
        self.gate, self.inside = threading.Event(), threading.Event()

    def embed(self, texts: list[str]) -> np.ndarray:
        if any(self.word in t for t in texts):
            self.inside.set()
            assert self.gate.wait(WAIT_S), "the test never opened the gate"
        vectors: np.ndarray = self.inner.embed(texts)
        return vectors

    def embed_one(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embed([text])[0]
        return vector

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_recall_during_a_drain_does_not_wait_for_it(home: Path, embedder) -> None:
    settings = load_settings(home)
    add_note(settings, "The NAS backup runs nightly at 02:00 with restic.", embedder=embedder)  # an index to read
    note, _ = make_note(settings, "The tidepool release ships on Fridays after the smoke tests.")
    spool.append(settings.state_dir, {"op": "note", "conversation": note.model_dump(mode="json")})
    gated = GatedEmbedder(embedder, "tidepool")
    shared = SharedService(MemoryService(settings, gated))  # type: ignore[arg-type]
    stop = threading.Event()
    loop = threading.Thread(target=drain_loop.drain_loop, args=(shared, stop), daemon=True)
    answers: dict[str, Any] = {}
    try:
        loop.start()
        assert gated.inside.wait(WAIT_S), "the drain never reached its index write"
        assert holder(settings.state_dir) is not None  # the drain holds the writer lock (and the ledger)

        recall = threading.Thread(target=lambda: answers.update(
            recall=shared.call(lambda s: s.recall("when does the NAS backup run"))))
        browse = threading.Thread(target=lambda: answers.update(
            conversations=shared.call_ledger(lambda s: list_conversations(s.settings))))
        recall.start()
        browse.start()
        recall.join(WAIT_S)
        assert not recall.is_alive(), "the recall waited for the drain"
        assert not gated.gate.is_set() and loop.is_alive()  # the drain was still holding on
        assert "02:00" in answers["recall"]["block"]
    finally:
        gated.gate.set()
    # The ledger read waited for the drain instead of colliding with its read-write connection.
    browse.join(WAIT_S)
    assert {c["id"] for c in answers["conversations"]} >= {note.id}
    try:
        while spool.pending(settings.state_dir):
            assert loop.is_alive(), "the drain loop ended with the spool not drained"
            loop.join(0.2)
    finally:
        stop.set()
        loop.join(WAIT_S)
    assert "Fridays" in shared.call(lambda s: s.recall("tidepool release day"))["block"]
