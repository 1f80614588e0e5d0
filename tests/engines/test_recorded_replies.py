"""Every recorded small-model reply (tests/fixtures/replies/, bench/record_replies.py) goes through
the parser, repair and validation the stages use: it parses, is repaired, or falls back with a
reason — never a crash.

The segmentation fixture is replayed through the chunk stage's own model path
(`memvault.stages.chunk.model_segments`) on the labelled conversations it was recorded on; the prompts
must be the very ones the model answered (same hash), or the fixture is stale.
"""

import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from memvault.engines import FakeEngine
from memvault.engines.base import parse_reply
from memvault.stages.chunk_model import ChunkReply
from memvault.stages.cluster_model import ClusterReply
from memvault.stages.synthesize_model import SynthesisReply

ROOT = Path(__file__).resolve().parents[2]
REPLIES = ROOT / "tests" / "fixtures" / "replies"
FIXTURES = sorted(REPLIES.glob("*.json"))
SHAPES: dict[str, type[BaseModel]] = {"chunk": ChunkReply, "cluster": ClusterReply, "synthesize": SynthesisReply}


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_fixtures_are_there_small_and_say_where_they_come_from() -> None:
    kinds = {("data" in load(p)) for p in FIXTURES}
    assert kinds == {True, False}, "expected a segmentation and a stages recording in tests/fixtures/replies/"
    assert "Apache License" in (REPLIES / "NOTICE").read_text()
    assert sum(p.stat().st_size for p in FIXTURES) < 200_000  # text fixtures, not a blob
    for path in FIXTURES:
        data = load(path)
        assert "SmolLM2-135M-Instruct" in data["model"] and data["licence"].startswith("Apache-2.0")
        assert data["path"] and data["decoding"] and data["calls"]
        for call in data["calls"]:
            assert call["stage"] in SHAPES and len(call["prompt_sha256"]) == 16 and isinstance(call["reply"], str)


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_every_reply_parses_or_says_why_not(path: Path) -> None:
    for call in load(path)["calls"]:
        try:
            value = parse_reply(call["reply"], SHAPES[call["stage"]])
        except ValueError as exc:  # what `structured` turns into a retry, then a fallback with this reason
            assert str(exc)
        else:
            assert isinstance(value, SHAPES[call["stage"]])


def segmentation_fixtures() -> list[Path]:
    return [p for p in FIXTURES if "data" in load(p)]


@pytest.mark.parametrize("path", segmentation_fixtures(), ids=[p.stem for p in segmentation_fixtures()])
def test_recorded_chunk_replies_replay_through_the_stage_path(path: Path) -> None:
    from bench.chunk_quality import conversation_row, replay_replies, rows
    from memvault.prompts import load_prompt
    from memvault.config.settings import load_settings
    from memvault.stages.chunk import exchanges, model_segments

    data = load(path)
    convs = {c["id"]: c for c in json.loads((ROOT / data["data"]).read_text(encoding="utf-8"))["conversations"]}
    recorded = {cid: [c for c in data["calls"] if c.get("conversation") == cid] for cid in replay_replies(path)}
    settings = load_settings(tempfile.mkdtemp(prefix="memvault-replay-"))
    prompt = load_prompt("chunk", ROOT / "vault_template" / "Meta")
    outcomes = {"model": 0, "repaired": 0, "fallback": 0}
    for cid, calls in recorded.items():
        fresh = [m for g in exchanges(rows(convs[cid])) for m in g]
        engine = FakeEngine([c["reply"] for c in calls], model=data["model"])
        chunks, why, notes = model_segments(engine, prompt, settings.chunk, conversation_row(convs[cid]), fresh,
                                            lambda _c: None)
        # The replay asked exactly what the model was asked, and used every reply it gave.
        assert [hashlib.sha256(c.prompt.encode()).hexdigest()[:16] for c in engine.calls] == \
            [c["prompt_sha256"] for c in calls], f"{cid}: prompts changed since recording — re-record the fixture"
        assert engine.responses == []
        if chunks is None:
            assert why, cid  # a fallback always says why
            outcomes["fallback"] += 1
            continue
        # A usable reply covers every message exactly once, in order.
        ids = [m.native_id for msgs, _ in chunks for m in msgs]
        assert ids == [m.native_id for m in fresh] and all(name for _, name in chunks)
        outcomes["repaired" if notes else "model"] += 1
    assert sum(outcomes.values()) == len(recorded) > 0
