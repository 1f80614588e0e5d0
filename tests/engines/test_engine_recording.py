"""Engines built for a home record every prompt they send, before sending it."""

from pathlib import Path

from pydantic import BaseModel

from memvault.engines import EngineSettings, FakeEngine, RecordingEngine, make_engine, structured
from memvault.hygiene.selfcalls import SelfCallLog, prompt_digest, self_call_log


class _Reply(BaseModel):
    a: int


def test_recording_engine_records_system_and_prompt_of_every_call(tmp_path: Path) -> None:
    log = self_call_log(tmp_path)
    engine = RecordingEngine(FakeEngine(["not json", '{"a": 1}']), log)
    assert engine.name == "fake"
    structured(engine, "the system", "the prompt", _Reply, 50)  # two calls: a retry with the error
    digests = log.digests()
    assert {prompt_digest("the system"), prompt_digest("the prompt")} <= digests
    assert len(digests) == 3  # system, first prompt, retry prompt


def test_make_engine_wraps_only_when_asked_and_never_none(tmp_path: Path) -> None:
    server = EngineSettings(openai_base_url="http://127.0.0.1:9")
    engine, _ = make_engine(server, "openai", record_to=tmp_path)
    assert isinstance(engine, RecordingEngine)
    plain, _ = make_engine(server, "openai")
    assert not isinstance(plain, RecordingEngine)
    none, _ = make_engine(EngineSettings(), "none", record_to=tmp_path)
    assert none.name == "none" and not isinstance(none, RecordingEngine)


def test_the_log_keeps_the_newest_digests(tmp_path: Path) -> None:
    log = SelfCallLog(tmp_path / "self_calls.log", keep=10)
    for n in range(40):
        log.record([f"prompt {n}"])
    digests = log.digests()
    assert prompt_digest("prompt 39") in digests and prompt_digest("prompt 0") not in digests
    assert len(digests) <= 20
