"""In-process engine on mlx-lm (Apple Silicon, or `mlx[cpu]` on Linux).

The model loads once, lazily, from a local folder or the Hugging Face cache — never from the
network. A shared system-prompt prefix (`cache_prefix`) is prefilled once into a KV cache and
each call continues from a deep copy of it, as `mlx_lm.server` does with its prompt cache.

With `constrain` on (the default), a call given a `json_schema` decodes under it: a logits
processor masks every token that would leave the schema (memvault.engines.constrain), and
generation stops as soon as the JSON value is complete — a tokenizer without an EOS token,
or a model that never emits it, no longer runs on to `max_tokens`.
"""

import copy
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from memvault.engines.base import Call, Completion, Engine, EngineError, check_cache_prefix
from memvault.engines.constrain import JsonConstraint, Node, TokenVocab, UnsupportedSchema, compile_schema

log = logging.getLogger(__name__)

# Prefilled prefixes kept at once; each holds a KV cache the size of its prefix.
_MAX_PREFIXES = 4


def resolve_model(name: str) -> Path:
    """Map a folder or a Hugging Face repo id to a local folder, without any download."""
    path = Path(name).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            raise EngineError(f"{path} is not an mlx model folder (no config.json)")
        return path
    if name.startswith(("/", ".", "~")):
        raise EngineError(f"no model folder at {path} — check `mlx_model` in memvault.toml")
    try:
        from mlx_lm.utils import hf_repo_to_path
    except ImportError as exc:
        raise EngineError("mlx-lm is not installed — install memvault with its mlx extra") from exc
    try:
        # local_files_only: the HF_HUB_OFFLINE behaviour, whatever the environment says.
        return Path(hf_repo_to_path(name))  # type: ignore[no-untyped-call]  # mlx-lm is untyped
    except (OSError, ValueError) as exc:
        raise EngineError(
            f"model {name!r} is not in the local Hugging Face cache and memvault never downloads — "
            f"fetch it once with `huggingface-cli download {name}` (or `hf download {name}`), "
            "or set `mlx_model` to a local folder"
        ) from exc


def render_prompt(tokenizer: Any, system: str, prompt: str) -> tuple[str, bool]:
    """Render the chat; returns (text, templated). Plain text when the tokenizer has no template."""
    if not tokenizer.has_chat_template:
        return f"{system}\n\n{prompt}\n\nassistant:", False
    from jinja2.exceptions import TemplateError

    messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
    try:
        return tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False), True
    except TemplateError:
        # Some templates (Gemma's) refuse a system role: fold it into the user turn.
        merged = [{"role": "user", "content": f"{system}\n\n{prompt}"}]
        return tokenizer.apply_chat_template(merged, add_generation_prompt=True, tokenize=False), True


def _common_prefix_len(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class MlxEngine(Engine):
    """mlx-lm in process. Thread-safe: one generation at a time."""

    name = "mlx"

    def __init__(
        self,
        model: str,
        *,
        temperature: float = 0.2,
        top_p: float = 0.95,
        max_kv_size: int | None = None,
        seed: int | None = None,
        constrain: bool = True,
    ) -> None:
        self.model: str | None = model
        self.constrain = constrain
        self.temperature = temperature
        self.top_p = top_p
        self.max_kv_size = max_kv_size
        self.seed = seed
        # Counters for tests and run reports: prefixes prefilled, and calls that reused one.
        self.prefix_prefills = 0
        self.prefix_reuses = 0
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any] | None = None
        self._prefixes: OrderedDict[str, tuple[list[int], list[Any]]] = OrderedDict()
        self._vocab: TokenVocab | None = None
        self._grammars: dict[str, Node | None] = {}

    def load(self) -> None:
        """Load model and tokenizer now (otherwise the first `complete` does); EngineError on failure."""
        with self._lock:
            self._ensure_loaded()

    def _ensure_loaded(self) -> tuple[Any, Any]:
        if self._loaded is not None:
            return self._loaded
        path = resolve_model(str(self.model))
        try:
            import mlx.core as mx
            import mlx_lm
        except ImportError as exc:
            raise EngineError("mlx-lm is not installed — install memvault with its mlx extra") from exc
        try:
            model, tokenizer = mlx_lm.load(str(path))[:2]
        except Exception as exc:  # any failure inside mlx-lm becomes one clear error
            raise EngineError(f"could not load mlx model {self.model!r} from {path}: {exc}") from exc
        if self.seed is not None:
            mx.random.seed(self.seed)
        log.info("mlx model loaded from %s", path)
        self._loaded = (model, tokenizer)
        return self._loaded

    def answer(self, call: Call) -> Completion:
        """Generate a reply, decoded under `json_schema` when given and `constrain` is on; callers validate."""
        system, prompt, max_tokens, json_schema, cache_prefix = call
        check_cache_prefix(system, cache_prefix)
        with self._lock:
            start = time.perf_counter()
            model, tokenizer = self._ensure_loaded()
            text, templated = render_prompt(tokenizer, system, prompt)
            tokens = _encode(tokenizer, text, templated)
            cache, rest = self._reuse_prefix(model, tokenizer, text, templated, tokens, cache_prefix)
            constraint = self._constraint(tokenizer, json_schema, max(1, max_tokens))
            reply, generated = self._generate(model, tokenizer, rest, cache, max_tokens, constraint)
            return Completion(
                text=reply,
                prompt_tokens=len(tokens),
                completion_tokens=generated,
                seconds=time.perf_counter() - start,
            )

    def _constraint(self, tokenizer: Any, json_schema: dict[str, Any] | None, max_tokens: int) -> JsonConstraint | None:
        """The constraint for this reply, or None (no schema, `constrain` off, or a schema not covered)."""
        if not self.constrain or json_schema is None:
            return None
        key = json.dumps(json_schema, sort_keys=True)
        if key not in self._grammars:
            try:
                self._grammars[key] = compile_schema(json_schema)
            except UnsupportedSchema as exc:
                log.warning("mlx: reply schema not constrainable (%s); decoding unconstrained", exc)
                self._grammars[key] = None
        grammar = self._grammars[key]
        if grammar is None:
            return None
        if self._vocab is None:
            self._vocab = TokenVocab.from_tokenizer(tokenizer)
        return JsonConstraint(self._vocab, grammar, max_tokens)

    def _generate(
        self, model: Any, tokenizer: Any, tokens: list[int], cache: list[Any] | None, max_tokens: int,
        constraint: JsonConstraint | None = None,
    ) -> tuple[str, int]:
        import mlx.core as mx
        from mlx_lm import stream_generate
        from mlx_lm.sample_utils import make_sampler

        sampler = make_sampler(temp=self.temperature, top_p=self.top_p)
        processors = [_logits_processor(constraint, len(tokens))] if constraint is not None else None
        pieces: list[str] = []
        generated: list[int] = []
        for response in stream_generate(
            model,
            tokenizer,
            mx.array(tokens),
            max_tokens=max(1, max_tokens),
            sampler=sampler,
            prompt_cache=cache,
            max_kv_size=self.max_kv_size,
            logits_processors=processors,
        ):
            pieces.append(response.text)
            if response.finish_reason != "stop":  # a "stop" response carries the EOS token, not a new one
                generated.append(response.token)
            if constraint is not None:
                constraint.sync(generated)
                if constraint.done or constraint.broken:
                    break
        if constraint is not None:
            return constraint.text(), len(generated)
        return "".join(pieces), len(generated)

    def _reuse_prefix(
        self, model: Any, tokenizer: Any, text: str, templated: bool, tokens: list[int], cache_prefix: str | None
    ) -> tuple[list[Any] | None, list[int]]:
        """A copy of the prefilled prefix cache and the tokens still to process (or None, all)."""
        if not cache_prefix:
            return None, tokens
        entry = self._prefixes.get(cache_prefix)
        if entry is None:
            entry = self._prefill(model, tokenizer, text, templated, tokens, cache_prefix)
            if entry is None:
                return None, tokens
        prefix_tokens, prefix_cache = entry
        n = len(prefix_tokens)
        if tokens[:n] != prefix_tokens or len(tokens) <= n:
            # The template tokenized this call's prefix differently: no reuse, same result.
            log.debug("prefix cache miss: this prompt does not start with the cached tokens")
            return None, tokens
        self._prefixes.move_to_end(cache_prefix)
        self.prefix_reuses += 1
        return copy.deepcopy(prefix_cache), tokens[n:]

    def _prefill(
        self, model: Any, tokenizer: Any, text: str, templated: bool, tokens: list[int], cache_prefix: str
    ) -> tuple[list[int], list[Any]] | None:
        import mlx.core as mx
        from mlx_lm.generate import generate_step
        from mlx_lm.models.cache import make_prompt_cache

        at = text.find(cache_prefix)
        if at < 0:
            log.debug("prefix cache skipped: the chat template altered the system prompt")
            return None
        # Tokens of the rendered text up to the end of the prefix, cut to where they agree
        # with the full prompt (a token may straddle the boundary), keeping one token to process.
        head = _encode(tokenizer, text[: at + len(cache_prefix)], templated)
        n = min(_common_prefix_len(head, tokens), len(tokens) - 1)
        if n <= 0:
            return None
        cache = make_prompt_cache(model, max_kv_size=self.max_kv_size)
        # max_tokens=0 runs the prefill only (as mlx_lm.cache_prompt does).
        for _ in generate_step(mx.array(tokens[:n]), model, max_tokens=0, prompt_cache=cache):
            pass
        entry = (tokens[:n], cache)
        self._prefixes[cache_prefix] = entry
        while len(self._prefixes) > _MAX_PREFIXES:
            self._prefixes.popitem(last=False)
        self.prefix_prefills += 1
        return entry


def _logits_processor(constraint: JsonConstraint, prompt_len: int) -> Callable[[Any, Any], Any]:
    """An mlx-lm logits processor applying `constraint`; mlx-lm passes it the prompt plus the tokens so far."""
    import mlx.core as mx

    def process(tokens: Any, logits: Any) -> Any:
        seen = prompt_len + len(constraint.tokens)
        if tokens.size > seen:
            constraint.feed(tokens[seen:].tolist())
        allowed = constraint.mask()
        if allowed is None:  # complete or broken: the engine stops on this token
            return logits
        width = logits.shape[-1]
        full = np.zeros(width, dtype=bool)
        n = min(width, allowed.size)
        full[:n] = allowed[:n]
        return mx.where(mx.array(full), logits, mx.array(-float("inf"), dtype=logits.dtype))

    return process


def _encode(tokenizer: Any, text: str, templated: bool) -> list[int]:
    # A chat template already writes BOS and friends into the text.
    return list(tokenizer.encode(text, add_special_tokens=not templated))
