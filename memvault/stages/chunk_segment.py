"""chunk, no-model path: where one topic ends and the next begins, from embeddings and cues.

Both methods work on exchanges (a user turn and the replies after it), each embedded as its
whole text, and return the exchanges that open a new topic.

`learned` (the default, ``learned_boundaries``): every gap between two exchanges gets the
explainable features of memvault.stages.chunk_features (cosines either side over 1-3
exchanges, valley depth, TF-IDF overlap, greeting / request / "do you ...?" / announced-shift
/ closing phrases); a logistic regression (``WEIGHTS``) turns them into a boundary
probability and the gaps reaching ``THRESHOLD`` are cut. A conversation between people (no
replies: every exchange one message) is read message by message with a table of its own
(``PEOPLE_WEIGHTS`` over ``PEOPLE_FEATURES``), since either person may open a topic. Fitted on
public dialogues with human gold (bench/segmentation_train.py), chosen on their dev splits,
reported on their test splits (bench/README.md); the weights are constant tables, no model file.

`valleys` (``valley_boundaries``, the earlier hand rule): TextTiling (Hearst 1997). The
similarity at a gap is the mean of the neighbours' cosine and of the three exchanges on each
side; a gap is cut when it is a valley below an absolute floor or at least ``depth`` below
the peaks on both sides, or when the user turn opens with a topic-shift phrase ("unrelated:",
"another question") and the similarity is not high. 480 variants of it are scored by
bench/segmentation_variants.py.
"""

from collections.abc import Sequence

import numpy as np

from memvault.stages.chunk_features import (FEATURES, PEOPLE_FEATURES, depth_scores, gap_features, people_features,
                                            shift_cue, unit)

BLOCK = 3  # exchanges on each side of a gap in the wider block comparison
CUE_SIMILARITY = 0.5  # a topic-shift phrase cuts unless the gap is at least this similar


def gap_similarities(vectors: np.ndarray, block: int = BLOCK) -> list[float]:
    """Cosine at each of the ``n - 1`` gaps: mean of the neighbour and the ``block``-wide comparison."""
    sims = []
    for g in range(1, len(vectors)):
        near = float(vectors[g - 1] @ vectors[g])
        left, right = unit(vectors[max(0, g - block):g].mean(axis=0)), unit(vectors[g:g + block].mean(axis=0))
        sims.append((near + float(left @ right)) / 2)
    return sims


def valley_boundaries(vectors: np.ndarray, user_texts: Sequence[str], floor: float, depth: float) -> set[int]:
    """The hand rule: indices of the exchanges that open a new topic (never 0).

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


# The learned scorer's logistic-regression weights of memvault.stages.chunk_features.FEATURES, in
# the features' own units. Fitted on 3,009 gaps with human gold (TIAGE train, PersonaChat, MIT;
# DialSeg711's dev split as bench/segmentation_sets.py defines it); THRESHOLD and MIN_EXCHANGES
# chosen on TIAGE dev + DialSeg711 dev (best mean F1 with Pk and WindowDiff no worse than not cutting):
#   .venv/bin/python bench/segmentation_train.py --train tiage:train --train dialseg711:dev \
#       --set tiage:dev --set dialseg711:dev --held tiage:test --held dialseg711:test --cache C --embed-cache E
# Read: low cosines (cos_1) and word overlap (lex_2) and a deep valley mean a new topic; so do a
# greeting, a question about the other person, an announced shift and a closing before the gap.
WEIGHTS: dict[str, float] = {
    "cos_1": -3.0339, "cos_2": -0.8101, "cos_3": 1.7272, "depth": 2.0942, "relative": -0.7433,
    "lex_1": -0.3065, "lex_2": -4.4501, "shift_phrase": 0.8757, "greeting": 2.0691, "request": 0.3574,
    "question": -0.0745, "reply_opens": 0.0127, "reply_question": -0.2904, "asks_you": 1.4746,
    "reply_asks_you": 0.8497, "closing": 0.6947,
}
BIAS = -0.0367
THRESHOLD = 0.45  # cut where the boundary probability reaches this (ChunkSettings.boundary_threshold)
MIN_EXCHANGES = 1  # and no other cut is closer than this many exchanges (2 and 3 did worse on dev)
WEIGHTS_ARRAY = np.array([WEIGHTS.get(f, 0.0) for f in FEATURES])

# The table for people talking (every exchange one message), over PEOPLE_FEATURES: fitted on the
# 4,392 message gaps of TIAGE train read as two people (both speakers opened topics there);
# threshold and spacing chosen on TIAGE dev the same way:
#   .venv/bin/python bench/segmentation_train.py --table people --train tiage:train --set tiage:dev \
#       --set dialseg711:dev --held tiage:test --held dialseg711:test --cache C --embed-cache E
# Read: a low cosine across the gap over two messages (cos_2) and a question about the other person
# after it mean a new topic; a question before it (answered next) and a return to the earlier
# messages (cos_span, cos_back) mean the same one.
PEOPLE_WEIGHTS: dict[str, float] = {
    "cos_1": -0.9070, "cos_2": -9.9811, "cos_3": 2.1411, "depth": 0.3656, "relative": -1.0815, "lex_1": -0.5761,
    "lex_2": 1.2741, "shift_phrase": 1.7145, "greeting": -0.0771, "request": 0.1165, "question": 0.9159,
    "asks_you": 1.0182, "closing": 0.0258, "prev_question": -0.7889, "prev_asks_you": -0.2627,
    "after_question": -0.0168, "cos_next": 0.1220, "cos_prev": -0.6861, "cos_skip": 0.6658, "cos_back": 1.2127,
    "cos_span": 2.5391, "cos_4": -0.9808, "cos_drop": -0.4906,
}
PEOPLE_BIAS = 1.3475
PEOPLE_THRESHOLD = 0.275
PEOPLE_MIN_MESSAGES = 2  # an answer stays with its question: no two cuts in adjacent gaps
PEOPLE_ARRAY = np.array([PEOPLE_WEIGHTS.get(f, 0.0) for f in PEOPLE_FEATURES])


def probabilities(features: np.ndarray, weights: np.ndarray = WEIGHTS_ARRAY, bias: float = BIAS) -> np.ndarray:
    """Boundary probability of each gap (one row of ``features`` each)."""
    return np.asarray(1 / (1 + np.exp(-(features @ weights + bias))), dtype=np.float64)


def pick(probs: np.ndarray, threshold: float = THRESHOLD, min_exchanges: int = MIN_EXCHANGES) -> set[int]:
    """Cuts (exchange indices, never 0) at the most probable gaps reaching ``threshold``, strongest
    first, skipping a gap closer than ``min_exchanges`` to a cut already made."""
    kept: list[int] = []
    for i in np.argsort(-probs, kind="stable"):
        if probs[i] < threshold:
            break
        if all(abs(int(i) + 1 - k) >= min_exchanges for k in kept):
            kept.append(int(i) + 1)
    return set(kept)


def between_people(turns: Sequence[Sequence[str]]) -> bool:
    """True when no exchange has a reply: people talking, each message its own unit."""
    return all(len(t) == 1 for t in turns)


def features(vectors: np.ndarray, turns: Sequence[Sequence[str]]) -> tuple[str, np.ndarray]:
    """Which table scores the conversation (`people` or `exchanges`) and its gaps' features."""
    if between_people(turns):
        return "people", people_features(vectors, [t[0] for t in turns])
    return "exchanges", gap_features(vectors, turns)


def learned_boundaries(vectors: np.ndarray, turns: Sequence[Sequence[str]], threshold: float = THRESHOLD) -> set[int]:
    """The learned scorer: indices of the exchanges that open a new topic (never 0).

    ``vectors``: one unit vector per exchange; ``turns``: each exchange's message texts, its
    user turn first ("" first when it opens with a reply); ``threshold``: the boundary
    probability a gap between exchanges needs to be cut (people talking have their own,
    ``PEOPLE_THRESHOLD``).
    """
    if len(vectors) < 2:
        return set()
    table, x = features(vectors, turns)
    if table == "people":
        return pick(probabilities(x, PEOPLE_ARRAY, PEOPLE_BIAS), PEOPLE_THRESHOLD, PEOPLE_MIN_MESSAGES)
    return pick(probabilities(x), threshold)


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
