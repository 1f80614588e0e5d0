"""The variants of evidence gathered across hits (issue 29 item 1: answers that span turns),
scored by `bench/recall_quality.py --variants gather`, in families as in `fusion_variants.py`.

Each family holds the product's defaults without the new terms ("none") as a member, so that
left one conversation out it may choose no change. The second hop's candidates need cases
captured with them (`--set recall.hop_k=20`); each variant names its `hop_k` (0: the first
hop's candidates alone, as recall was before), and the cases are cut to it.
"""

from collections.abc import Mapping

from memvault.recall.scoring import ScoringWeights

from bench.fusion_variants import BenchWeights

PREFIX = "gather"
HOP_CAPTURED = 20  # recall.hop_k the cases are captured with


def gather_variants(defaults: ScoringWeights) -> dict[str, dict[str, ScoringWeights]]:
    """Family name → {variant name: weights}, on the product's defaults."""
    product = BenchWeights(**defaults.model_dump(), hop_k=0).model_copy(
        update={"w_hop": 0.0, "w_session": 0.0, "w_cover": 0.0, "w_speaker": 0.0, "guess_shift": 0.0, "w_content": 0.0})
    families: dict[str, dict[str, ScoringWeights]] = {}

    def family(name: str, changes: Mapping[str, Mapping[str, object]]) -> None:
        full = f"{PREFIX}: {name}"
        members = {"none": {}, **changes}
        families[full] = {f"{full}: {label}": product.model_copy(update=change) for label, change in members.items()}

    # First round: each term alone.
    family("second-hop candidates", {f"hop_k {k}": {"hop_k": k} for k in (10, 20)})
    family("hop term", {f"w_hop {x:g}, hop_k {k}": {"w_hop": x, "hop_k": k}
                        for k in (0, 20) for x in (0.05, 0.1, 0.2, 0.3)}
           | {"w_hop 0.1, hop_k 20, hop_full 1": {"w_hop": 0.1, "hop_k": 20, "hop_full": 1}})
    family("session support", {f"w_session {x:g}, top {n}": {"w_session": x, "session_top": n}
                               for n in (1, 3) for x in (0.05, 0.1, 0.2)})
    family("query coverage", {f"w_cover {x:g}": {"w_cover": x} for x in (0.05, 0.1, 0.2)})
    family("speaker", {f"w_speaker {x:g}": {"w_speaker": x} for x in (0.03, 0.06, 0.12)})
    # Second round, after the first on the whole dev file: the speaker weight further, and with
    # each of the others at its best single value.
    speaker = {f"speaker {x:g}": {"w_speaker": x} for x in (0.12, 0.2, 0.3)}
    family("combined", speaker | {
        "speaker 0.12, cover 0.2": {"w_speaker": 0.12, "w_cover": 0.2},
        "speaker 0.2, cover 0.2": {"w_speaker": 0.2, "w_cover": 0.2},
        "speaker 0.12, hop 0.1, hop_k 20": {"w_speaker": 0.12, "w_hop": 0.1, "hop_k": 20},
        "speaker 0.12, session 0.05 top 1": {"w_speaker": 0.12, "w_session": 0.05, "session_top": 1}})
    return families


def third_round(defaults: ScoringWeights) -> dict[str, dict[str, ScoringWeights]]:
    """Family name → {variant name: weights}, on the product's defaults after the second round
    (the speaker term at 0.12): diversity in the head, more speaker weight on the two question
    forms whose evidence is all the named person's own turns, and meaning over words on a guess
    (`guess_shift`, adopted at 0.2)."""
    product = BenchWeights(**defaults.model_dump(), hop_k=0).model_copy(
        update={"w_speaker": 0.12, "w_guess": 0.0, "w_list": 0.0, "guess_shift": 0.0, "w_content": 0.0})
    families: dict[str, dict[str, ScoringWeights]] = {}

    def family(name: str, changes: Mapping[str, Mapping[str, object]]) -> None:
        full = f"{PREFIX}, third round: {name}"
        members = {"none": {}, **changes}
        families[full] = {f"{full}: {label}": product.model_copy(update=change) for label, change in members.items()}

    # Multi-hop evidence sits in 2.6 sessions on average: a node loses a little for each node
    # of its session (or each turn next to it) already ranked above it.
    family("diversity", {f"{kind} {x:g}": {f"{kind}_penalty": x}
                         for kind in ("session", "passage") for x in (0.02, 0.05, 0.1)})
    family("guess speaker", {f"w_guess {x:g}": {"w_guess": x} for x in (0.08, 0.18, 0.33)})
    family("list speaker", {f"w_list {x:g}": {"w_list": x} for x in (0.08, 0.18, 0.33)})
    family("guess and list", {f"guess {g:g}, list {x:g}": {"w_guess": g, "w_list": x}
                              for g in (0.18, 0.33) for x in (0.08, 0.18)})
    # On a guess the question's words are seldom the evidence's: part of the lexical weight
    # moves to cosine (0.3: cos 0.65, lex 0.10), with or without the guess's speaker weight.
    family("guess shift", {f"w_guess {g:g}, shift {x:g}": {"w_guess": g, "guess_shift": x}
                           for g in (0.0, 0.18, 0.33) for x in (0.1, 0.2, 0.3)})
    family("guess shift and list", {f"guess {g:g}, shift {x:g}, list {n:g}": {"w_guess": g, "guess_shift": x, "w_list": n}
                                    for g in (0.18, 0.33) for x in (0.2, 0.3) for n in (0.0, 0.08)})
    return families


def fourth_round(defaults: ScoringWeights) -> dict[str, dict[str, ScoringWeights]]:
    """Family name → {variant name: weights}, on the product's defaults after the third round
    (`guess_shift` 0.2, no content prior): a turn scored with the best of its own score and its
    exchange's (the child and sibling lifts at full strength), and the content prior (adopted:
    `w_content` 0.2, `content_full` 12). Rocchio feedback and content MMR need the nodes'
    vectors, which the cases do not keep: bench/recall_vector_variants.py."""
    product = BenchWeights(**defaults.model_dump(), hop_k=0).model_copy(update={"w_content": 0.0})
    families: dict[str, dict[str, ScoringWeights]] = {}

    def family(name: str, changes: Mapping[str, Mapping[str, object]]) -> None:
        full = f"{PREFIX}, fourth round: {name}"
        members = {"none": {}, **changes}
        families[full] = {f"{full}: {label}": product.model_copy(update=change) for label, change in members.items()}

    family("exchange best-of", {f"child {c:g}, sibling {s:g}": {"child_damping": c, "sibling_damping": s}
                                for c in (0.55, 0.8, 1.0) for s in (0.5, 0.8, 1.0) if (c, s) != (0.55, 0.5)})
    # The grids as they were tried: 3–6 words, 6–12, then 12–20 around the best so far.
    grid = [(x, n) for x in (0.03, 0.06) for n in (3, 6)] + [(0.1, 3)]
    grid += [(x, n) for x in (0.1, 0.15, 0.2, 0.3) for n in (6, 8, 10, 12)]
    grid += [(x, n) for x in (0.15, 0.2, 0.25) for n in (12, 14, 16, 20) if (x, n) not in grid]
    family("content prior", {f"w_content {x:g}, full {n}": {"w_content": x, "content_full": n} for x, n in grid})
    return families


def sentence_round(defaults: ScoringWeights) -> dict[str, dict[str, ScoringWeights]]:
    """Issue 29's seventh round: a turn's best sentence (``index.sentence_vectors``, read into
    the cases as each candidate's ``sentence_cos``) weighed with the turn in its context
    (``w_sentence``), and the cosine's share of the base with it (``w_cos`` + ``w_lex`` = 0.75,
    ``guess_shift`` moving the rest of the lexical weight on a guess). "before" is the product
    without it (``w_sentence`` 0, ``w_cos`` 0.35, ``guess_shift`` 0.2). Adopted: ``w_sentence``
    0.5, ``w_cos`` 0.45, ``guess_shift`` 0.3 (chosen in every fold)."""
    product = BenchWeights(**defaults.model_dump())
    members: dict[str, dict[str, object]] = {"before": {"w_sentence": 0.0, "w_cos": 0.35, "w_lex": 0.40, "guess_shift": 0.2}}
    for share in (0.0, 0.5, 0.67):
        for cos in (0.35, 0.40, 0.45, 0.50):
            for shift in (0.2, 0.3, 0.4):
                members[f"sentence {share:g}, cos {cos:g}, guess_shift {shift:g}"] = {
                    "w_sentence": share, "w_cos": cos, "w_lex": round(0.75 - cos, 2), "guess_shift": shift}
    full = f"{PREFIX}, seventh round: sentence cosine"
    return {full: {f"{full}: {label}": product.model_copy(update=change) for label, change in members.items()}}
