"""JSON-schema-constrained decoding: a character-level matcher and a token mask over a vocabulary.

A small model asked for JSON often writes prose, copies the prompt, or runs on to `max_tokens`.
With the reply's JSON schema compiled here (`compile_schema`), an engine that samples token by
token (memvault.engines.mlx) masks every token whose text would leave the schema's language,
so the reply always parses as the schema. It covers the shapes memvault asks for — objects
(all properties, in schema order), arrays with min/max items, strings with min/max length or
an enum, null, booleans, integers, `anyOf`/`$ref` — and raises `UnsupportedSchema` for
anything else, so the caller generates unconstrained instead of wrongly.

The mask also keeps the reply finishable: a token is allowed only when the shortest completion
after it fits in the tokens left (one character per token at least), so a reply cut by
`max_tokens` cannot happen while the constraint holds. Validation still runs afterwards: the
schema here is the shape, pydantic (and the stage's repair) judge the content.
"""

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np
import numpy.typing as npt

_WS = frozenset(" \t\n\r")
_DIGITS = frozenset("0123456789")
_HEX = frozenset("0123456789abcdefABCDEF")
_ESCAPES = frozenset('"\\/bfnrt')
_MAX_INT_DIGITS = 15
_MAX_REF_DEPTH = 16


class UnsupportedSchema(ValueError):
    """The schema uses a feature the matcher does not cover; generate unconstrained."""


# Nodes compare by identity (eq=False): states hold them, and hashing a whole tree per step would cost.
@dataclass(frozen=True, eq=False)
class Obj:
    props: tuple[tuple[str, "Node"], ...]
    min_chars: int = 0


@dataclass(frozen=True, eq=False)
class Arr:
    item: "Node"
    min_items: int = 0
    max_items: int | None = None
    min_chars: int = 0


@dataclass(frozen=True, eq=False)
class Str:
    min_len: int = 0
    max_len: int | None = None
    enum: tuple[str, ...] | None = None
    min_chars: int = 0


@dataclass(frozen=True, eq=False)
class Lit:
    text: str
    min_chars: int = 0


@dataclass(frozen=True, eq=False)
class Int:
    min_chars: int = 1


@dataclass(frozen=True, eq=False)
class Alt:
    options: tuple["Node", ...]
    min_chars: int = 0


Node = Union[Obj, Arr, Str, Lit, Int, Alt]


def _first_chars(node: Node) -> frozenset[str]:
    if isinstance(node, Obj):
        return frozenset("{")
    if isinstance(node, Arr):
        return frozenset("[")
    if isinstance(node, Str):
        return frozenset('"')
    if isinstance(node, Lit):
        return frozenset(node.text[0])
    if isinstance(node, Int):
        return _DIGITS | {"-"}
    return frozenset().union(*(_first_chars(o) for o in node.options))


def _obj(props: list[tuple[str, Node]]) -> Obj:
    size = 2 + sum(len(json.dumps(k)) + 1 + v.min_chars for k, v in props) + max(0, len(props) - 1)
    return Obj(tuple(props), size)


def _arr(item: Node, lo: int, hi: int | None) -> Arr:
    if hi is not None and hi < lo:
        raise UnsupportedSchema(f"array with maxItems {hi} < minItems {lo}")
    return Arr(item, lo, hi, 2 + lo * item.min_chars + max(0, lo - 1))


def _str(lo: int, hi: int | None, enum: tuple[str, ...] | None = None) -> Str:
    if enum is not None:
        return Str(0, None, enum, 2 + min(len(e) for e in enum))
    if hi is not None and hi < lo:
        raise UnsupportedSchema(f"string with maxLength {hi} < minLength {lo}")
    return Str(lo, hi, None, 2 + lo)


def _alt(options: list[Node]) -> Node:
    if len(options) == 1:
        return options[0]
    seen: set[str] = set()
    for option in options:
        first = _first_chars(option)
        if first & seen:
            # Branches told apart by their first character only; anything subtler is not covered.
            raise UnsupportedSchema("anyOf branches that start alike")
        seen |= first
    return Alt(tuple(options), min(o.min_chars for o in options))


def compile_schema(schema: dict[str, Any]) -> Node:
    """The matcher's grammar for a JSON schema (as pydantic's `model_json_schema` writes it)."""
    defs = schema.get("$defs") or schema.get("definitions") or {}
    return _compile(schema, defs, 0)


def _literal(value: object) -> Node:
    if isinstance(value, str):
        return _str(0, None, (value,))
    if value is None or isinstance(value, (bool, int)):
        text = json.dumps(value)
        return Lit(text, len(text))
    raise UnsupportedSchema(f"enum value {value!r}")


def _compile(schema: dict[str, Any], defs: dict[str, Any], depth: int) -> Node:
    if depth > _MAX_REF_DEPTH:
        raise UnsupportedSchema("schema nests too deep (recursive $ref?)")
    if "$ref" in schema:
        ref = str(schema["$ref"])
        name = ref.rsplit("/", 1)[-1]
        if not ref.startswith("#/") or name not in defs:
            raise UnsupportedSchema(f"$ref {ref!r}")
        return _compile(defs[name], defs, depth + 1)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return _alt([_compile(s, defs, depth + 1) for s in schema[key]])
    if "const" in schema:
        return _literal(schema["const"])
    if "enum" in schema:
        values = list(schema["enum"])
        if values and all(isinstance(v, str) for v in values):
            return _str(0, None, tuple(values))
        return _alt([_literal(v) for v in values])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _alt([_compile({**schema, "type": k}, defs, depth + 1) for k in kind])
    if kind == "object":
        props = schema.get("properties")
        if not isinstance(props, dict):
            raise UnsupportedSchema("object without properties")
        return _obj([(str(k), _compile(v, defs, depth + 1)) for k, v in props.items()])
    if kind == "array":
        items = schema.get("items")
        if not isinstance(items, dict):
            raise UnsupportedSchema("array without one items schema")
        return _arr(_compile(items, defs, depth + 1), int(schema.get("minItems", 0)), schema.get("maxItems"))
    if kind == "string":
        return _str(int(schema.get("minLength", 0)), schema.get("maxLength"))
    if kind == "integer":
        return Int()
    if kind == "boolean":
        return _alt([Lit("true", 4), Lit("false", 5)])
    if kind == "null":
        return Lit("null", 4)
    raise UnsupportedSchema(f"type {kind!r}")


# A state is (stack of frames, top last; whether the last character was whitespace).
# Frames: ("V", node) a value; ("L", text, i) the rest of a literal; ("S", node, n, esc, prefix)
# inside a string (n characters so far, esc: 0 none, 1 after `\`, 2–5 inside `\uXXXX`);
# ("A0", node) just after `[`; ("A1", node, count) after an array item; ("I", digits, zero) an integer.
Frame = tuple[Any, ...]
State = tuple[tuple[Frame, ...], bool]


def start(node: Node) -> State:
    """The state before the first character of a value of `node`."""
    return ((("V", node),), False)


def finished(state: State) -> bool:
    """Whether the value is complete (nothing more may follow)."""
    return not state[0]


def _open(node: Node, ch: str, rest: tuple[Frame, ...]) -> tuple[Frame, ...] | None:
    if isinstance(node, Alt):
        for option in node.options:
            if ch in _first_chars(option):
                return _open(option, ch, rest)
        return None
    if isinstance(node, Obj):
        if ch != "{":
            return None
        frames: list[Frame] = [("L", "}", 0)]
        for k, (key, value) in reversed(list(enumerate(node.props))):
            frames += [("V", value), ("L", ":", 0), ("L", json.dumps(key), 0)]
            if k:
                frames.append(("L", ",", 0))
        return rest + tuple(frames)
    if isinstance(node, Arr):
        return rest + (("A0", node),) if ch == "[" else None
    if isinstance(node, Str):
        return rest + (("S", node, 0, 0, ""),) if ch == '"' else None
    if isinstance(node, Lit):
        if ch != node.text[0]:
            return None
        return rest if len(node.text) == 1 else rest + (("L", node.text, 1),)
    if ch == "-":
        return rest + (("I", 0, False),)
    if ch in _DIGITS:
        return rest + (("I", 1, ch == "0"),)
    return None


def _string(top: Frame, rest: tuple[Frame, ...], ch: str) -> tuple[Frame, ...] | None:
    _, node, n, esc, prefix = top
    if esc == 1:
        if ch in _ESCAPES:
            return rest + (("S", node, n + 1, 0, prefix),)
        return rest + (("S", node, n, 2, prefix),) if ch == "u" else None
    if esc >= 2:
        if ch not in _HEX:
            return None
        return rest + ((("S", node, n + 1, 0, prefix),) if esc == 5 else (("S", node, n, esc + 1, prefix),))
    if ch == '"':
        if node.enum is not None:
            return rest if prefix in node.enum else None
        return rest if n >= node.min_len else None
    if ord(ch) < 0x20 or (node.max_len is not None and n + 1 > node.max_len):
        return None
    if node.enum is not None:
        grown = prefix + ch
        if ch == "\\" or not any(e.startswith(grown) for e in node.enum):
            return None
        return rest + (("S", node, n + 1, 0, grown),)
    if ch == "\\":
        return rest + (("S", node, n, 1, prefix),)
    return rest + (("S", node, n + 1, 0, prefix),)


def advance(state: State, ch: str) -> State | None:
    """The state after one more character, or None when the character leaves the schema."""
    stack, was_ws = state
    while stack:
        top, rest = stack[-1], stack[:-1]
        kind = top[0]
        if kind == "S":
            out = _string(top, rest, ch)
            return None if out is None else (out, False)
        if kind == "I":
            _, digits, zero = top
            if ch in _DIGITS and not (zero and digits == 1) and digits < _MAX_INT_DIGITS:
                return rest + (("I", digits + 1, zero and digits == 0 and ch == "0"),), False
            if digits == 0:
                return None
            stack = rest  # the integer ended; this character belongs to what follows
            continue
        if ch in _WS:
            # One whitespace character at a time, never inside a literal: enough for tokenizers
            # whose pieces start with a space, and no way to stall on blanks.
            if was_ws or (kind == "L" and top[2] > 0):
                return None
            return stack, True
        if kind == "L":
            _, text, i = top
            if text[i] != ch:
                return None
            return (rest if i + 1 == len(text) else rest + (("L", text, i + 1),)), False
        if kind == "V":
            opened = _open(top[1], ch, rest)
            return None if opened is None else (opened, False)
        node = top[1]
        if kind == "A0":
            if ch == "]":
                return (rest, False) if node.min_items == 0 else None
            opened = _open(node.item, ch, rest + (("A1", node, 1),))
            return None if opened is None else (opened, False)
        count = top[2]  # "A1"
        if ch == ",":
            if node.max_items is not None and count >= node.max_items:
                return None
            return rest + (("A1", node, count + 1), ("V", node.item)), False
        if ch == "]":
            return (rest, False) if count >= node.min_items else None
        return None
    return None


def advance_text(state: State, text: str) -> State | None:
    """`advance` over each character of `text`."""
    current = state
    for ch in text:
        nxt = advance(current, ch)
        if nxt is None:
            return None
        current = nxt
    return current


def _frame_min(frame: Frame) -> int:
    kind = frame[0]
    if kind == "V":
        return int(frame[1].min_chars)
    if kind == "L":
        return len(frame[1]) - int(frame[2])
    if kind == "S":
        _, node, n, esc, prefix = frame
        if esc:
            return int((1 if esc == 1 else 6 - esc) + max(0, node.min_len - n - 1) + 1)
        if node.enum is not None:
            return min(len(e) for e in node.enum if e.startswith(prefix)) - len(prefix) + 1
        return int(max(0, node.min_len - n) + 1)
    if kind == "I":
        return 0 if frame[1] else 1
    node = frame[1]
    if kind == "A0":
        return 1 if node.min_items == 0 else int(node.min_items * (node.item.min_chars + 1))
    missing = max(0, node.min_items - int(frame[2]))
    return int(missing * (node.item.min_chars + 1) + 1)


def min_finish(state: State) -> int:
    """Fewest characters that complete the value from `state`."""
    return sum(_frame_min(f) for f in state[0])


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
            below = sum(_frame_min(f) for f in stack[:-1])
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
