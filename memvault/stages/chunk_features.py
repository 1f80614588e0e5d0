"""chunk, no-model path: explainable features of each gap between two exchanges.

One row per gap (between exchange ``i`` and ``i + 1``), one column per name in ``FEATURES``:

- embedding cohesion: the cosine of the exchanges either side of the gap over 1, 2 and 3
  exchanges, the TextTiling depth of the blended similarity, and that similarity less the
  conversation's own mean (a shift inside one domain, where everything is fairly similar);
- lexical cohesion: TF-IDF cosine of the words either side (1 and 2 exchanges), the IDF from
  the conversation itself;
- cue phrases: the next user turn announces a new topic ("unrelated:", "another question"),
  opens with a greeting or a request ("hi", "I need", "I am looking for"), is a question, or
  asks about the other person ("do you like ...?"); the reply before the gap does one of
  those (a new topic opened by the other side); the exchange before the gap closes
  ("thanks, goodbye", "that is all").

Turn lengths and the distance to either end of the conversation were tried too and left out:
they differ between data sets more than between topics, and cost F1 on the dev splits.

``people_features`` serves a conversation between people, read message by message (every
exchange one message, no replies): ``FEATURES`` plus ``PEOPLE_EXTRA``, whether the message
before the gap asks something (an answer follows, not a new topic) and whether the one after
the next does, and single-message cosines around the gap (does the new message go on with the
next one, does the one before it go back to the one after). memvault.stages.chunk_segment
combines the features with learned weights into a boundary score.
"""

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from memvault.stages.text import EMBED_CHARS

FEATURES = (
    "cos_1", "cos_2", "cos_3", "depth", "relative", "lex_1", "lex_2",
    "shift_phrase", "greeting", "request", "question", "reply_opens", "reply_question", "asks_you", "reply_asks_you",
    "closing",
)

PEOPLE_EXTRA = (
    "prev_question", "prev_asks_you", "after_question",
    "cos_next", "cos_prev", "cos_skip", "cos_back", "cos_span", "cos_4", "cos_drop",
)
PEOPLE_FEATURES = FEATURES + PEOPLE_EXTRA

# A user turn that announces a new topic. Matched at its start (after fillers such as "ok,"
# or "also"), so "another question" in the middle of a sentence does not count.
SHIFT_CUE = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|alright|right|so|now|and|also|oh|btw|hey|hi)[\s,.!:-]+)*"
    r"(?:(?:a |one )?(?:different|separate|unrelated|new|another|other|quick|last|final|next|random|side)"
    r"(?: \w+)?(?: (?:question|topic|thing|issue|one|problem|task|subject|matter))?\b"
    r"|switching|changing (?:the )?(?:topic|subject)|on to\b|moving on|something (?:else|different)"
    r"|while (?:i'm|i am|we're|we are) (?:here|at it|in)|speaking of|by the way|one more\b)",
    re.IGNORECASE,
)
GREETING = re.compile(r"^\W*(?:hi|hello|hey|hiya|howdy|greetings|good (?:morning|afternoon|evening))\b", re.IGNORECASE)
# A request that opens a task ("I need a train", "I am looking for a restaurant"), at the start
# of the turn or of its second sentence ("Hello, I am looking for ...").
REQUEST = re.compile(
    r"(?:^|[.!?,]\s+)\W*(?:i(?:'m| am) (?:looking|trying|searching|interested|planning)"
    r"|i (?:need|want|would like|'d like|wanna)|(?:can|could|would) you (?:help|find|recommend|book|tell me)"
    r"|(?:please )?help me|please (?:find|book|help))\b",
    re.IGNORECASE,
)
CLOSING = re.compile(
    r"\b(?:thanks?|thank you|thx|bye|goodbye|that(?:'s| is| will be| would be) (?:all|it|everything)"
    r"|have a (?:nice|good|great|wonderful) (?:day|one|night|trip|time)|you'?re welcome|nothing else)\b",
    re.IGNORECASE,
)
# A question about the other person's life ("do you like ...?", "what do you do for fun?"): how
# small talk opens a new subject.
ASKS_YOU = re.compile(r"\b(?:do|did|have|are|were|what|how|where|which)(?: \w+)? you\b[^.!?]*\?", re.IGNORECASE)
_WORD = re.compile(r"[^\W\d_]{3,}|\d+", re.UNICODE)


def shift_cue(text: str) -> bool:
    """True when ``text`` (a user turn) opens by announcing a change of topic."""
    return bool(SHIFT_CUE.match(text))


def unit(v: np.ndarray) -> np.ndarray:
    """``v`` scaled to length 1 along its last axis."""
    return np.asarray(v / (np.linalg.norm(v, axis=-1, keepdims=True) + 1e-12), dtype=np.float32)


def block_cosines(vectors: np.ndarray, block: int) -> np.ndarray:
    """Cosine at each gap between the mean of up to ``block`` exchanges on either side."""
    out = [float(unit(vectors[max(0, g - block):g].mean(axis=0)) @ unit(vectors[g:g + block].mean(axis=0)))
           for g in range(1, len(vectors))]
    return np.array(out, dtype=np.float64)


def depth_scores(sims: Sequence[float]) -> list[float]:
    """TextTiling depth of each gap: how far it lies below the highest points reached climbing each way."""
    out = []
    for i, s in enumerate(sims):
        left = right = s
        j = i
        while j > 0 and sims[j - 1] >= left:
            left, j = sims[j - 1], j - 1
        j = i
        while j < len(sims) - 1 and sims[j + 1] >= right:
            right, j = sims[j + 1], j + 1
        out.append((left - s) + (right - s))
    return out


def lexical_cosines(texts: Sequence[str], block: int) -> np.ndarray:
    """TF-IDF cosine at each gap of up to ``block`` exchanges either side, IDF from ``texts`` themselves."""
    bags = [Counter(w.lower() for w in _WORD.findall(t)) for t in texts]
    df = Counter(w for b in bags for w in b)
    idf = {w: math.log((len(bags) + 1) / (d + 0.5)) for w, d in df.items()}

    def weigh(part: Sequence[Counter[str]]) -> dict[str, float]:
        total: Counter[str] = Counter()
        for b in part:
            total.update(b)
        return {w: c * idf[w] for w, c in total.items()}

    out = []
    for g in range(1, len(bags)):
        a, b = weigh(bags[max(0, g - block):g]), weigh(bags[g:g + block])
        dot = sum(x * b.get(w, 0.0) for w, x in a.items())
        norm = math.sqrt(sum(x * x for x in a.values()) * sum(x * x for x in b.values()))
        out.append(dot / norm if norm else 0.0)
    return np.array(out, dtype=np.float64)


def _cue_columns(turns: Sequence[Sequence[str]], g: int) -> list[float]:
    """The cue columns of the gap before exchange ``g``."""
    nxt, before = turns[g][0] if turns[g] else "", turns[g - 1]
    head = nxt[:200]
    replies = before[1:]
    return [
        float(shift_cue(head)), float(bool(GREETING.match(head))), float(bool(REQUEST.search(head))),
        float("?" in nxt), float(any(GREETING.match(r[:200]) or REQUEST.search(r[:200]) for r in replies)),
        float(bool(replies) and "?" in replies[-1]),
        float(bool(ASKS_YOU.search(head))), float(bool(replies) and bool(ASKS_YOU.search(replies[-1][-300:]))),
        float(any(CLOSING.search(t[-300:]) for t in before)),
    ]


def gap_features(vectors: np.ndarray, turns: Sequence[Sequence[str]]) -> np.ndarray:
    """The ``FEATURES`` of each of the ``n - 1`` gaps between ``n`` exchanges.

    ``vectors``: one unit vector per exchange (its whole text embedded); ``turns``: each
    exchange's message texts, its user turn first ("" first when it opens with a reply).
    """
    n = len(vectors)
    if n < 2:
        return np.zeros((0, len(FEATURES)))
    near, wide2, wide3 = (block_cosines(vectors, b) for b in (1, 2, 3))
    blend = (near + wide3) / 2
    # The words of each exchange as far as its embedding reads (agent replies run to pages of tool output).
    whole = [" ".join(t)[:EMBED_CHARS] for t in turns]
    rows = []
    depth = depth_scores(list(blend))
    lex1, lex2 = lexical_cosines(whole, 1), lexical_cosines(whole, 2)
    for i in range(n - 1):
        rows.append([near[i], wide2[i], wide3[i], depth[i], blend[i] - blend.mean(), lex1[i], lex2[i],
                     *_cue_columns(turns, i + 1)])
    return np.array(rows, dtype=np.float64)


def people_features(vectors: np.ndarray, texts: Sequence[str]) -> np.ndarray:
    """The ``PEOPLE_FEATURES`` of each of the ``n - 1`` gaps between ``n`` messages of people talking.

    ``vectors``: one unit vector per message; ``texts``: the messages. Gap ``g - 1`` lies
    between message ``g - 1`` and message ``g``.
    """
    n = len(vectors)
    if n < 2:
        return np.zeros((0, len(PEOPLE_FEATURES)))
    base = gap_features(vectors, [[t] for t in texts])

    def cos(a: int, b: int) -> float:
        return float(vectors[a] @ vectors[b]) if 0 <= a < n and 0 <= b < n else 0.0

    wide4 = block_cosines(vectors, 4)
    rows = []
    for g in range(1, n):
        prev, after = texts[g - 1], texts[g + 1] if g + 1 < n else ""
        rows.append([float("?" in prev), float(bool(ASKS_YOU.search(prev[-300:]))), float("?" in after),
                     cos(g, g + 1), cos(g - 2, g - 1), cos(g - 1, g + 1), cos(g - 2, g), cos(g - 2, g + 1),
                     wide4[g - 1], cos(g - 1, g) - cos(g, g + 1)])
    return np.hstack([base, np.array(rows, dtype=np.float64)])
