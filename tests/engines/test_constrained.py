"""Constrained decoding: the JSON matcher over the reply shapes, and the mlx engine under it.

The tiny random-weight llama writes gibberish; under the constraint its reply must still parse
as the schema (the same call without the constraint does not), and stop when the JSON closes.
"""

import json
import random
import string
from pathlib import Path

import pytest
from pydantic import BaseModel

from memvault.engines import structured
from memvault.engines.base import parse_reply
from memvault.engines.constrain import (
    TokenVocab, UnsupportedSchema, advance, advance_text, compile_schema, finished, min_finish, start,
)
from memvault.engines.mlx import MlxEngine
from memvault.stages.chunk_model import ChunkReply
from memvault.stages.cluster_model import ClusterReply
from memvault.stages.synthesize_model import SynthesisReply

REPLIES = (ChunkReply, ClusterReply, SynthesisReply)


@pytest.mark.parametrize("model_cls", REPLIES)
def test_every_walk_the_matcher_allows_is_valid_json_of_the_schema(model_cls: type[BaseModel]) -> None:
    grammar = compile_schema(model_cls.model_json_schema())
    chars = list(string.printable)
    for seed in range(6):
        rnd = random.Random(seed)
        state, out, budget = start(grammar), "", 300
        while not finished(state):
            left = budget - len(out) - 1
            options = [c for c in chars if (s := advance(state, c)) is not None and min_finish(s) <= left]
            assert options, f"dead end after {out!r}"
            ch = rnd.choice(options)
            state, out = advance(state, ch), out + ch  # type: ignore[assignment]
        assert len(out) <= budget
        model_cls.model_validate(json.loads(out))


def test_matcher_rejects_what_leaves_the_schema() -> None:
    grammar = compile_schema(SynthesisReply.model_json_schema())
    s0 = start(grammar)
    assert advance_text(s0, '{"lead": "x", "edits": [{"section": "S", "action": "app') is not None
    assert advance_text(s0, '{"lead": "x", "edits": [{"section": "S", "action": "delete"') is None  # not in the enum
    assert advance_text(s0, '{"edits": []') is None  # properties in schema order
    assert advance_text(s0, 'Sure! {"lead"') is None  # no preamble
    chunk = compile_schema(ChunkReply.model_json_schema())
    assert advance_text(start(chunk), '{"chunks": []') is None  # minItems 1
    assert advance_text(start(chunk), '{"chunks": [{"start": "m1", "end": "m2", "label": ""') is None  # minLength 1


def test_unsupported_schema_is_said() -> None:
    with pytest.raises(UnsupportedSchema):
        compile_schema({"type": "object", "additionalProperties": {"type": "string"}})
    with pytest.raises(UnsupportedSchema):
        compile_schema({"anyOf": [{"type": "object", "properties": {}}, {"type": "object", "properties": {}}]})


def test_vocab_pieces_follow_the_tokenizer(tiny_model: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model))
    vocab = TokenVocab.from_tokenizer(tokenizer)
    ids = tokenizer.convert_tokens_to_ids(["{", "##{", "chunks", "##chunks" if "##chunks" in tokenizer.vocab else "##s"])
    pieces = [vocab.pieces[i] for i in ids]
    assert pieces[0] == " {" and pieces[1] == "{" and pieces[2] == " chunks"  # WordPiece: `##` joins, others add a space
    assert vocab.pieces[tokenizer.convert_tokens_to_ids("[CLS]")] == ""  # special tokens are never allowed


@pytest.fixture(scope="module")
def engines(tiny_model: Path) -> tuple[MlxEngine, MlxEngine]:
    free = MlxEngine(str(tiny_model), temperature=0.0, constrain=False)
    free.load()
    constrained = MlxEngine(str(tiny_model), temperature=0.0, constrain=True)
    constrained.load()
    return free, constrained


@pytest.mark.parametrize("model_cls, max_tokens", [(ChunkReply, 48), (ClusterReply, 64)])
def test_random_weights_reply_parses_only_under_the_constraint(engines: tuple[MlxEngine, MlxEngine],
                                                               model_cls: type[BaseModel], max_tokens: int) -> None:
    free, constrained = engines
    schema = model_cls.model_json_schema()
    prompt = "Split the conversation [m1] user: backups [m2] assistant: use pgBackRest"
    loose = free.complete("Answer with JSON.", prompt, max_tokens=max_tokens, json_schema=schema)
    with pytest.raises(ValueError):
        parse_reply(loose.text, model_cls)
    assert loose.completion_tokens == max_tokens  # gibberish runs to the limit
    done = constrained.complete("Answer with JSON.", prompt, max_tokens=max_tokens, json_schema=schema)
    parse_reply(done.text, model_cls)  # raises if it does not fit the schema
    assert 0 < done.completion_tokens <= max_tokens


def test_structured_succeeds_first_time_under_the_constraint(engines: tuple[MlxEngine, MlxEngine]) -> None:
    _, constrained = engines
    system = "Answer with JSON." * 5
    result = structured(constrained, system, "Integrate the material.", SynthesisReply, 80, cache_prefix=system)
    assert result.value is not None and result.reason is None and len(result.completions) == 1
