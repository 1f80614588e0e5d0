"""MlxEngine on the tiny random llama: text, token counts, prefix cache, offline-only loading."""

from pathlib import Path

import pytest

from memvault.engines import EngineError
from memvault.engines.mlx import MlxEngine

META = "Meta context: the buckets are Cooking, Travel and Taxes. " * 10


@pytest.fixture(scope="module")
def engine(tiny_model: Path) -> MlxEngine:
    engine = MlxEngine(str(tiny_model), temperature=0.0)
    engine.load()
    return engine


def test_returns_text_and_token_counts(engine: MlxEngine) -> None:
    done = engine.complete("You are terse.", "Say hello.", max_tokens=8)
    assert done.text.strip()
    assert done.completion_tokens == 8  # the borrowed tokenizer has no EOS: it runs to the limit
    assert done.prompt_tokens > 5
    assert done.seconds > 0


def test_plain_rendering_without_chat_template(engine: MlxEngine) -> None:
    from memvault.engines.mlx import render_prompt

    _, tokenizer = engine._ensure_loaded()
    text, templated = render_prompt(tokenizer, "SYS", "USER")
    assert (text, templated) == ("SYS\n\nUSER\n\nassistant:", False)


def test_prefix_cache_is_prefilled_once_and_changes_nothing(tiny_model: Path) -> None:
    import mlx.core as mx

    # Sampling (not greedy) so that a wrong cache would show as different text.
    engine = MlxEngine(str(tiny_model), temperature=1.0, top_p=1.0)
    engine.load()  # building the model draws random numbers; keep that out of the seeded calls
    system = META + "Assign the chunk to a bucket."
    replies = {}
    for use_cache in (False, True):
        for prompt in ("chunk about pasta", "chunk about visas"):
            mx.random.seed(7)
            done = engine.complete(system, prompt, max_tokens=12, cache_prefix=META if use_cache else None)
            replies[use_cache, prompt] = done.text
    assert replies[True, "chunk about pasta"] == replies[False, "chunk about pasta"]
    assert replies[True, "chunk about visas"] == replies[False, "chunk about visas"]
    assert (engine.prefix_prefills, engine.prefix_reuses) == (1, 2)


def test_missing_local_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="no model folder"):
        MlxEngine(str(tmp_path / "absent")).complete("s", "p", max_tokens=2)


def test_uncached_repo_is_not_downloaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    engine = MlxEngine("mlx-community/Some-Model-4bit")
    with pytest.raises(EngineError, match="huggingface-cli download mlx-community/Some-Model-4bit"):
        engine.load()


def test_broken_model_folder_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"model_type": "llama"}')
    with pytest.raises(EngineError, match="could not load mlx model"):
        MlxEngine(str(tmp_path)).load()


class _TemplatedTokenizer:
    """Stands in for a tokenizer whose chat template refuses the system role (as Gemma's does)."""

    has_chat_template = True

    def apply_chat_template(self, messages: list[dict], *, add_generation_prompt: bool, tokenize: bool) -> str:
        from jinja2.exceptions import TemplateError

        if any(m["role"] == "system" for m in messages):
            raise TemplateError("System role not supported")
        return "".join(f"<{m['role']}>{m['content']}</{m['role']}>" for m in messages) + "<assistant>"


def test_template_without_system_role_folds_it_into_the_user_turn() -> None:
    from memvault.engines.mlx import render_prompt

    text, templated = render_prompt(_TemplatedTokenizer(), "SYS", "USER")
    assert (text, templated) == ("<user>SYS\n\nUSER</user><assistant>", True)
