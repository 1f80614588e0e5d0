"""chunk, model path: the reply's shape, the prompt's message list, and deterministic repair.

The model sees the messages numbered `m1…mN` within one window and answers with
(start id, end id, label) triples. `repair` turns a near-miss into a clean cover of the
window — every message in exactly one chunk — or says why it cannot, in which case the
stage falls back to the no-model segmentation for that conversation.
"""

import re

from pydantic import BaseModel, Field

from stores.rows import MessageRow

_NUMBER = re.compile(r"\d+")
MESSAGE_CHARS = 700  # of each message shown to the model; the chunk keeps the full text
# A reply's size: `{"chunks": [` and its close, then one span of about 30 tokens
# (`{"start": "m12", "end": "m19", "label": "…eight words…"}`) per chunk, and a topic
# spans at least one exchange (two messages).
_REPLY_OVERHEAD_TOKENS = 16
_SPAN_TOKENS = 32


class ChunkSpan(BaseModel):
    start: str = Field(description="Id of the chunk's first message, e.g. m1")
    end: str = Field(description="Id of the chunk's last message")
    label: str = Field(min_length=1, max_length=200, description="Short topic of the chunk")


class ChunkReply(BaseModel):
    chunks: list[ChunkSpan] = Field(min_length=1)


class RepairError(ValueError):
    """The reply cannot be turned into a clean cover of the messages."""


def windows(messages: list[MessageRow], max_chars: int) -> list[list[MessageRow]]:
    """Consecutive groups of messages whose shown text fits in `max_chars` (at least one each)."""
    out: list[list[MessageRow]] = []
    size = 0
    for m in messages:
        shown = min(len(m.text), MESSAGE_CHARS) + 16
        if out and size + shown <= max_chars:
            out[-1].append(m)
            size += shown
        else:
            out.append([m])
            size = shown
    return out


def reply_tokens(n_messages: int, cap: int) -> int:
    """`max_tokens` for a window of `n_messages`: room for a chunk per exchange, at most `cap`.

    A small model that does not stop stops here instead of running on to the stage's cap.
    """
    return max(1, min(cap, _REPLY_OVERHEAD_TOKENS + _SPAN_TOKENS * -(-n_messages // 2)))


def show(messages: list[MessageRow]) -> str:
    """The numbered message list of the prompt."""
    lines = []
    for i, m in enumerate(messages, start=1):
        text = " ".join(m.text.split())
        if len(text) > MESSAGE_CHARS:
            text = text[:MESSAGE_CHARS] + " …"
        lines.append(f"[m{i}] {m.role}: {text}")
    return "\n".join(lines)


def _index(raw: str, n: int, fallback: int | None) -> tuple[int, str | None]:
    """0-based index of a message id; near-misses are snapped, with a note saying so."""
    text = raw.strip()
    numbers = _NUMBER.findall(text)
    if re.fullmatch(r"[mM]?\s*#?\d+", text) and 1 <= int(numbers[0]) <= n:
        return int(numbers[0]) - 1, None
    if len(numbers) == 1:
        # Off by one past the end, or a decorated id ("message 7"): nearest valid position.
        k = min(max(int(numbers[0]), 1), n) - 1
        return k, f"id {raw!r} snapped to m{k + 1}"
    if fallback is not None:
        return fallback, f"id {raw!r} unknown, taken as m{fallback + 1} (its only possible position)"
    raise RepairError(f"message id {raw!r} is not one of m1…m{n}")


def repair(spans: list[ChunkSpan], n: int, max_gap: int) -> tuple[list[tuple[int, int, str]], list[str]]:
    """Clean inclusive ranges `(start, end, label)` covering 0…n-1 exactly once, and repair notes.

    Repairs: ids snapped to the nearest valid one (off by one, decorated, or — for the first
    start and the last end only — unknown); reversed ranges swapped; an overlap of one message
    given to the earlier chunk; a gap of up to `max_gap` messages given to the chunk before it
    (or the first chunk, at the start). Anything else raises RepairError.
    """
    notes: list[str] = []
    ranges: list[tuple[int, int, str]] = []
    for k, span in enumerate(spans):
        start, note_s = _index(span.start, n, 0 if k == 0 else None)
        end, note_e = _index(span.end, n, n - 1 if k == len(spans) - 1 else None)
        notes += [x for x in (note_s, note_e) if x]
        if start > end:
            start, end = end, start
            notes.append(f"chunk {k + 1}: start and end swapped")
        ranges.append((start, end, " ".join(span.label.split())[:120]))
    ranges.sort(key=lambda r: (r[0], r[1]))
    out: list[tuple[int, int, str]] = []
    for start, end, label in ranges:
        if not out:
            if start > max_gap:
                raise RepairError(f"the first {start} message(s) are in no chunk")
            if start:
                notes.append(f"first {start} message(s) joined to the first chunk")
            out.append((0, end, label))
            continue
        prev_start, prev_end, prev_label = out[-1]
        if end <= prev_end:
            if start == prev_start or end - start == 0:
                notes.append(f"chunk m{start + 1}–m{end + 1} lies inside the one before; dropped")
                continue
            raise RepairError(f"chunk m{start + 1}–m{end + 1} lies inside chunk m{prev_start + 1}–m{prev_end + 1}")
        if start <= prev_end:
            overlap = prev_end - start + 1
            if overlap > 1:
                raise RepairError(f"chunks overlap by {overlap} messages at m{start + 1}")
            notes.append(f"overlap at m{start + 1} given to the earlier chunk")
            start = prev_end + 1
        gap = start - prev_end - 1
        if gap > max_gap:
            raise RepairError(f"{gap} message(s) after m{prev_end + 1} are in no chunk")
        if gap:
            notes.append(f"gap of {gap} message(s) after m{prev_end + 1} joined to the chunk before")
            out[-1] = (prev_start, start - 1, prev_label)
        out.append((start, end, label))
    last_start, last_end, last_label = out[-1]
    tail = n - 1 - last_end
    if tail > max_gap:
        raise RepairError(f"the last {tail} message(s) are in no chunk")
    if tail:
        notes.append(f"last {tail} message(s) joined to the last chunk")
        out[-1] = (last_start, n - 1, last_label)
    return out, notes
