"""structured(): parse, one retry with the validation error, then a clean give-up."""

import pytest
from pydantic import BaseModel

from memvault.engines import EngineError, FakeEngine, extract_json, structured


class Bucket(BaseModel):
    name: str
    chunks: list[int]


def test_success_first_try_from_fenced_reply() -> None:
    engine = FakeEngine(['Sure! ```json\n{"name": "Cooking", "chunks": [1, 2]}\n``` hope that helps'])
    value, completions, reason = structured(engine, "sys", "cluster this", Bucket, max_tokens=50)
    assert value == Bucket(name="Cooking", chunks=[1, 2])
    assert reason is None
    assert len(completions) == 1
    assert engine.calls[0].kwargs["json_schema"] == Bucket.model_json_schema()
    assert engine.calls[0].kwargs["max_tokens"] == 50


def test_invalid_then_valid_retry_shows_the_error() -> None:
    engine = FakeEngine(['{"name": "Cooking", "chunks": "many"}', '{"name": "Cooking", "chunks": [3]}'])
    value, completions, reason = structured(engine, "sys", "cluster this", Bucket, max_tokens=50)
    assert value == Bucket(name="Cooking", chunks=[3])
    assert reason is None
    assert len(completions) == 2
    retry = engine.calls[1].prompt
    assert retry.startswith("cluster this")
    assert "chunks" in retry and "valid list" in retry  # pydantic's own words reach the model
    assert '"many"' in retry  # and so does its previous reply


def test_invalid_twice_gives_up_with_reason() -> None:
    engine = FakeEngine(["I cannot help with that.", "still no json"])
    value, completions, reason = structured(engine, "sys", "p", Bucket, max_tokens=10)
    assert value is None
    assert len(completions) == 2
    assert reason is not None and "Bucket" in reason and "no JSON" in reason
    assert engine.responses == []


def test_engine_failure_propagates() -> None:
    engine = FakeEngine([EngineError("server down")])
    with pytest.raises(EngineError, match="server down"):
        structured(engine, "sys", "p", Bucket, max_tokens=10)


def test_cache_prefix_is_passed_through_and_checked() -> None:
    engine = FakeEngine(['{"name": "a", "chunks": []}'])
    structured(engine, "META\nrules", "p", Bucket, max_tokens=10, cache_prefix="META\n")
    assert engine.calls[0].kwargs["cache_prefix"] == "META\n"
    with pytest.raises(ValueError, match="cache_prefix"):
        structured(engine, "rules", "p", Bucket, max_tokens=10, cache_prefix="META")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[1, 2] and {"a": 1}', [1, 2]),
        ('prose {not json} then {"a": {"b": [1]}} tail', {"a": {"b": [1]}}),
        ('```\n{"a": 1}\n```', {"a": 1}),
    ],
)
def test_extract_json_finds_the_first_value(text: str, expected: object) -> None:
    assert extract_json(text) == expected


def test_extract_json_without_json() -> None:
    with pytest.raises(ValueError, match="no JSON"):
        extract_json("nothing here {")
