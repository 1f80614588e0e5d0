"""JSON-schema-constrained decoding: a character-level matcher and a token mask over a vocabulary.

A small model asked for JSON often writes prose, copies the prompt, or runs on to `max_tokens`.
With the reply's JSON schema compiled (`compile_schema`), an engine that samples token by
token (memvault.engines.mlx) masks every token whose text would leave the schema's language,
so the reply always parses as the schema. It covers the shapes memvault asks for — objects
(all properties, in schema order), arrays with min/max items, strings with min/max length or
an enum, null, booleans, integers, `anyOf`/`$ref` — and raises `UnsupportedSchema` for
anything else, so the caller generates unconstrained instead of wrongly.

The mask also keeps the reply finishable: a token is allowed only when the shortest completion
after it fits in the tokens left (one character per token at least), so a reply cut by
`max_tokens` cannot happen while the constraint holds. Validation still runs afterwards: the
schema here is the shape, pydantic (and the stage's repair) judge the content.

Three modules by responsibility: the schema compiled into a grammar
(memvault.engines.constrain_grammar), the character matcher over it
(memvault.engines.constrain_matcher), and here the token side — each token's text
(`TokenVocab`) and the running constraint of one reply (`JsonConstraint`). The names callers
use are re-exported here.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from memvault.engines.constrain_grammar import Node, UnsupportedSchema, compile_schema
from memvault.engines.constrain_matcher import State, advance, advance_text, finished, frame_min, min_finish, start

__all__ = ["JsonConstraint", "Node", "State", "TokenVocab", "UnsupportedSchema", "advance", "advance_text",
           "compile_schema", "finished", "min_finish", "start"]


@dataclass
class _Trie:
    children: dict[str, "_Trie"] = field(default_factory=dict)
    ids: list[int] = field(default_factory=list)


class TokenVocab:
    """Each token's text as it reads when appended to a reply, and the index the mask needs.

    A token that reads as nothing (special tokens) or as a broken character (part of a UTF-8
    sequence) is never allowed under a constraint.
    """

    def __init__(self, pieces: Sequence[str]) -> None:
        self.pieces = [p if p and "\ufffd" not in p else "" for p in pieces]
        self.size = len(self.pieces)
        self.lengths = np.array([len(p) for p in self.pieces], dtype=np.int64)
        # Tokens that stay inside any free string: no quote, no backslash, no control character.
        self.string_safe = np.array(
            [bool(p) and '"' not in p and "\\" not in p and all(ord(c) >= 0x20 for c in p) for p in self.pieces])
        self.string_special = [i for i, p in enumerate(self.pieces) if p and not self.string_safe[i]]
        self.trie = _Trie()
        for i, piece in enumerate(self.pieces):
            node = self.trie
            for ch in piece:
                node = node.children.setdefault(ch, _Trie())
            if piece:
                node.ids.append(i)

    @classmethod
    def from_tokenizer(cls, tokenizer: Any) -> "TokenVocab":
        """Pieces of a Hugging Face tokenizer (or mlx-lm's wrapper of one).

        Each piece is the text a token adds after an ordinary one (decode of [anchor, token]
        minus decode of [anchor]), which gets SentencePiece's leading spaces and WordPiece's
        `##` joins right.
        """
        size = len(tokenizer.get_vocab())
        anchor = list(tokenizer.encode("a", add_special_tokens=False))[-1:]
        head = tokenizer.decode(anchor, skip_special_tokens=True, clean_up_tokenization_spaces=False)
        texts = tokenizer.batch_decode([anchor + [i] for i in range(size)], skip_special_tokens=True,
                                       clean_up_tokenization_spaces=False)
        return cls([t[len(head):] if t.startswith(head) else "" for t in texts])

    def allowed(self, state: State, remaining: int) -> npt.NDArray[np.bool_]:
        """Mask of the tokens that keep the reply in the schema and finishable in `remaining` more tokens."""
        mask = np.zeros(self.size, dtype=bool)
        stack = state[0]
        top = stack[-1] if stack else None
        if top is not None and top[0] == "S" and top[1].enum is None and top[3] == 0:
            # Inside a free string almost every token fits: vectorize those, walk the others.
            node, n = top[1], top[2]
            below = sum(frame_min(f) for f in stack[:-1])
            after = n + self.lengths
            ok = self.string_safe & (below + np.maximum(0, node.min_len - after) + 1 <= remaining)
            if node.max_len is not None:
                ok &= after <= node.max_len
            mask |= ok
            for i in self.string_special:
                nxt = advance_text(state, self.pieces[i])
                if nxt is not None and min_finish(nxt) <= remaining:
                    mask[i] = True
            return mask
        self._walk(self.trie, state, remaining, mask)
        return mask

    def _walk(self, trie: _Trie, state: State, remaining: int, mask: npt.NDArray[np.bool_]) -> None:
        for ch, child in trie.children.items():
            nxt = advance(state, ch)
            if nxt is None:
                continue
            if child.ids and min_finish(nxt) <= remaining:
                mask[child.ids] = True
            if child.children:
                self._walk(child, nxt, remaining, mask)


class JsonConstraint:
    """The running constraint of one reply: feed it tokens, ask it for the next mask."""

    def __init__(self, vocab: TokenVocab, grammar: Node, max_tokens: int) -> None:
        self.vocab = vocab
        self.max_tokens = max_tokens
        self.states: list[State] = [start(grammar)]
        self.tokens: list[int] = []
        self.broken = False  # a token outside the mask arrived (or no token was allowed)

    @property
    def state(self) -> State:
        return self.states[-1]

    @property
    def done(self) -> bool:
        return not self.broken and finished(self.state)

    def feed(self, tokens: Iterable[int]) -> None:
        """Advance over generated tokens (each once)."""
        for token in tokens:
            self.tokens.append(token)
            piece = self.vocab.pieces[token] if 0 <= token < self.vocab.size else ""
            nxt = advance_text(self.state, piece) if piece and not self.broken else None
            if nxt is None:
                self.broken = True
            else:
                self.states.append(nxt)

    def sync(self, generated: Sequence[int]) -> None:
        """Feed whatever of `generated` (every token of the reply so far) is new."""
        self.feed(generated[len(self.tokens):])

    def mask(self) -> npt.NDArray[np.bool_] | None:
        """Tokens allowed next; None once the reply is complete or broken (the caller stops)."""
        if self.broken or finished(self.state):
            return None
        allowed = self.vocab.allowed(self.state, self.max_tokens - len(self.tokens) - 1)
        if not allowed.any():
            self.broken = True
            return None
        return allowed

    def text(self) -> str:
        """The reply as the constraint read it (the pieces of the tokens fed)."""
        return "".join(self.vocab.pieces[t] for t in self.tokens if 0 <= t < self.vocab.size)
