"""Constrained decoding, part 2: the character-level matcher over a compiled grammar.

A state is where a partial reply stands in the grammar (memvault.engines.constrain_grammar);
`advance` takes one more character or says it leaves the schema, and `min_finish` counts the
fewest characters that still complete the value — what keeps a constrained reply finishable
within `max_tokens`. Pure functions over immutable tuples, so a token mask can try a
character from a state without copying it.
"""

import json
from typing import Any

from memvault.engines.constrain_grammar import DIGITS, Alt, Arr, Lit, Node, Obj, Str, first_chars

_WS = frozenset(" \t\n\r")
_HEX = frozenset("0123456789abcdefABCDEF")
_ESCAPES = frozenset('"\\/bfnrt')
_MAX_INT_DIGITS = 15

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
            if ch in first_chars(option):
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
    if ch in DIGITS:
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
            if ch in DIGITS and not (zero and digits == 1) and digits < _MAX_INT_DIGITS:
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


def frame_min(frame: Frame) -> int:
    """Fewest characters that complete one frame of a state."""
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
    return sum(frame_min(f) for f in state[0])
