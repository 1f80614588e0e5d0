"""Property tests of the normalize stage's text function: idempotent, and no citation lost
except the orphans it logs."""

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memvault.stages.normalize import normalize_text
from memvault.stages.wikify import clean_text
from memvault.markdown.footnotes import check_bijection, citations
from memvault.markdown.wikilinks import build_known

KNOWN = build_known(["Agent_Platforms", "Archie_Project", "Tide_Tables"], {"Archie_Project": ["Archie"]})
LABELS = st.sampled_from(["1", "2", "3", "7", "10", "x", "note"])
CONVS = st.sampled_from(["aaaaaaaa", "bbbbbbbb11", "cccccccc", "dddddddd", "eeeeeeee"])
LINKS = st.sampled_from(["[[agent platforms]]", "[[Archie]]", "[[archie project|the project]]", "[[Nowhere]]",
                         "[[Tide_Tables#Sources]]", "`[[in code]]`", "[[TIDE TABLES]]"])
WORDS = st.sampled_from(["tides", "station", "backup", "the", "runs", "nightly", "at", "02:30", "and", "keeps"])


@st.composite
def pieces(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["word", "word", "word", "marker", "link"]))
    if kind == "marker":
        return f"[^{draw(LABELS)}]"
    return draw(LINKS) if kind == "link" else draw(WORDS)


@st.composite
def definition(draw: st.DrawFn) -> str:
    return f"[^{draw(LABELS)}]: `conv:{draw(CONVS)}` (2026-05-0{draw(st.integers(1, 9))}, pi) — {draw(WORDS)}"


@st.composite
def articles(draw: st.DrawFn) -> str:
    """An article with messy footnotes (gaps, orphans, duplicates, out of order, definitions
    before use or under a References heading or none) and messy wikilinks."""
    blocks = ["# Tide Tables", ""]
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            blocks += [draw(definition()), ""]
        blocks += [" ".join(draw(st.lists(pieces(), min_size=1, max_size=12))) + ".", ""]
        if draw(st.booleans()):
            blocks += ["## Section", ""]
    if draw(st.booleans()):
        blocks += ["## References", ""]
    blocks += draw(st.lists(definition(), max_size=5))
    return "\n".join(blocks) + "\n"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(articles())
def test_normalize_is_idempotent(text: str) -> None:
    once, _, _ = normalize_text(text, KNOWN)
    twice, _, drops = normalize_text(once, KNOWN)
    assert twice == once
    assert drops == []
    assert check_bijection(once) == []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(articles())
def test_no_citation_is_lost_except_logged_orphans(text: str) -> None:
    new, _, log = normalize_text(text, KNOWN)
    after = set(citations(new))
    logged = " ".join(log)
    for cid in citations(text):
        assert cid in after or f"conv:{cid}" in logged, f"conv:{cid} vanished without a Talk log line"
    # A cited definition is never dropped: each label used in the body keeps its conversation.
    body_labels = set(re.findall(r"\[\^([^\]\s]+)\](?!:)", text.split("## References")[0]))
    for line in text.splitlines():
        m = re.match(r"\[\^([^\]\s]+)\]: `conv:([0-9a-f]+)`", line)
        if m and m.group(1) in body_labels and m.group(2) not in after:
            assert f"conv:{m.group(2)}" in logged  # only a conflicting duplicate of a label may go


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(articles())
def test_wikify_then_normalize_settles(text: str) -> None:
    normalized, _, _ = normalize_text(text, KNOWN)
    cleaned, reasons = clean_text(normalized, "Tide Tables", KNOWN)
    settled, _, _ = normalize_text(cleaned, KNOWN)
    assert set(citations(settled)) == set(citations(normalized)), reasons
    again, _ = clean_text(settled, "Tide Tables", KNOWN)
    assert normalize_text(again, KNOWN)[0] == settled
