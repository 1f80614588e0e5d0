"""chunk, no-model path: where one topic ends and the next begins, from embeddings and cues.

TextTiling (Hearst 1997) over sentence embeddings, on exchanges (a user turn and the replies
after it):

- the similarity at each gap between exchanges is the mean of two comparisons: the
  neighbours alone, and the three exchanges on each side (a one-exchange digression does not
  hide a shift, and one odd reply does not fake one);
- an exchange is embedded as its text (user turn and replies together);
- a gap is cut when it is a valley (no higher than its neighbours) whose similarity is below
  an absolute floor (clearly different text) or which lies at least ``depth`` below the peaks
  on both sides (a relative drop: shifts inside one domain, where everything is fairly
  similar), or when the user turn opens with a topic-shift phrase ("unrelated:", "another
  question", "switching to…") and the similarity is not high.

Chosen on real dialogues with human gold (the dev splits of TIAGE and DialSeg711) with
bench/segmentation_variants.py, reported on their test splits (bench/README.md). Every other
variant tried there — weighting the user turn, smoothing, a threshold from the conversation's
own depth distribution, lexical cohesion, a minimum segment length — did no better.
"""

import re
from collections.abc import Sequence

import numpy as np

BLOCK = 3  # exchanges on each side of a gap in the wider block comparison
CUE_SIMILARITY = 0.5  # a topic-shift phrase cuts unless the gap is at least this similar

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


def shift_cue(text: str) -> bool:
    """True when ``text`` (a user turn) opens by announcing a change of topic."""
    return bool(SHIFT_CUE.match(text))


def _unit(v: np.ndarray) -> np.ndarray:
    return np.asarray(v / (np.linalg.norm(v, axis=-1, keepdims=True) + 1e-12), dtype=np.float32)


def gap_similarities(vectors: np.ndarray, block: int = BLOCK) -> list[float]:
    """Cosine at each of the ``n - 1`` gaps: mean of the neighbour and the ``block``-wide comparison."""
    sims = []
    for g in range(1, len(vectors)):
        near = float(vectors[g - 1] @ vectors[g])
        left, right = _unit(vectors[max(0, g - block):g].mean(axis=0)), _unit(vectors[g:g + block].mean(axis=0))
        sims.append((near + float(left @ right)) / 2)
    return sims


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


def boundaries(vectors: np.ndarray, user_texts: Sequence[str], floor: float, depth: float) -> set[int]:
    """Indices of the exchanges that open a new topic (never 0).

    ``vectors``: one unit vector per exchange; ``user_texts``: each exchange's user turn ("" when
    it opens with a reply); ``floor``: similarity below which a valley is always cut;
    ``depth``: the relative drop that cuts a valley above the floor.
    """
    sims = gap_similarities(vectors)
    depths = depth_scores(sims)
    cuts = set()
    for i, (s, d) in enumerate(zip(sims, depths)):
        valley = (i == 0 or s <= sims[i - 1]) and (i == len(sims) - 1 or s <= sims[i + 1])
        if valley and (s < floor or d >= depth):
            cuts.add(i + 1)
        elif user_texts[i + 1] and shift_cue(user_texts[i + 1]) and s < CUE_SIMILARITY:
            cuts.add(i + 1)
    return cuts


def segment(vectors: np.ndarray, sizes: Sequence[int], cuts: set[int], max_chars: int) -> list[tuple[int, int]]:
    """[start, end) ranges of exchanges: cut at ``cuts`` and wherever a chunk would pass ``max_chars``."""
    n = len(vectors)
    if n == 0:
        return []
    ranges, start, size = [], 0, 0
    for i in range(n):
        if i > start and (i in cuts or size + sizes[i] > max_chars):
            ranges.append((start, i))
            start, size = i, 0
        size += sizes[i]
    ranges.append((start, n))
    return ranges
