"""The editorial gate: a clean successor passes; each defect fails for its own reason."""

import pytest

from memvault.markdown.gate import gate, word_count

KNOWN = {"1a2b3c4d" + "0" * 56, "5e6f7a8b" + "1" * 56, "99999999" + "2" * 56}


@pytest.fixture
def previous(article):
    return article("footnotes_clean.md")


def reasons_for(new: str, previous: str) -> list[str]:
    return gate(new, previous, KNOWN)


def test_identical_successor_passes(previous):
    assert reasons_for(previous, previous) == []


def test_first_version_passes_without_previous(previous):
    assert gate(previous, None, None) == []


def test_growth_with_new_citation_passes(previous):
    new = previous.replace("More detail here.[^1]", "More detail here.[^1] New fact.[^3]")
    new += "[^3]: `conv:99999999` (2026-05-12, pi) — third\n"
    assert reasons_for(new, previous) == []


def test_longer_prefix_counts_as_the_same_citation(previous):
    new = previous.replace("conv:1a2b3c4d", "conv:1a2b3c4d00")
    assert reasons_for(new, previous) == []


def test_shrinking_fails(previous):
    padded = previous.replace("More detail here.", "More detail here. " + "word " * 40)
    [reason] = reasons_for(previous, padded)
    assert reason.startswith("shrank:")


def test_lost_citation_fails(previous):
    new = previous.replace(" And another.[^2]", " And another.").replace(
        "[^2]: `conv:5e6f7a8b` (2026-05-11, codex) — second\n", ""
    )
    assert reasons_for(new, previous) == ["lost citation conv:5e6f7a8b"]


def test_broken_bijection_fails(previous):
    new = previous + "[^3]: `conv:99999999` (2026-05-12, pi) — never cited\n"
    assert reasons_for(new, previous) == ["footnotes: definition [^3] on line 13 is never cited"]


@pytest.mark.parametrize(
    "chatter",
    [
        "Sure, here is the article you asked for.",
        "Certainly! I have merged the new notes.",
        "As an AI, I have no personal opinions about this.",
        "I cannot help with that request.",
        "I'm sorry, but the transcript is empty.",
        "Here is the updated article:",
        "This is the updated article with the new section.",
        "Let me know if you want more changes.",
    ],
)
def test_chatter_fails(previous, chatter):
    new = previous.replace("## Details", f"{chatter}\n\n## Details")
    reasons = reasons_for(new, previous)
    assert len(reasons) == 1 and reasons[0].startswith("model chatter on line 5"), reasons


def test_preamble_before_title_fails(previous):
    reasons = reasons_for("Here is the updated article:\n\n" + previous, previous)
    assert any(r.startswith("model chatter on line 1") for r in reasons)
    assert any(r.startswith("structure: text before the title") for r in reasons)


def test_ordinary_here_is_prose_passes(previous):
    prose = "Here is where the design diverges from the original plan, because the scheduler was rewritten."
    new = previous.replace("## Details", f"{prose}\n\n## Details")
    assert reasons_for(new, previous) == []


def test_unknown_conversation_fails(previous):
    new = previous.replace("conv:5e6f7a8b", "conv:deadbeef")
    assert reasons_for(new, None) == ["unknown conversation conv:deadbeef"]


def test_known_ids_are_optional(previous):
    assert gate(previous.replace("conv:5e6f7a8b", "conv:deadbeef"), None, None) == []


def test_two_titles_fail(previous):
    new = previous.replace("## Details", "# Details")
    assert reasons_for(new, previous) == ["structure: expected exactly one H1 title, found 2"]


def test_missing_title_fails(previous):
    new = previous.replace("# Clean Article\n\n", "")
    assert "structure: expected exactly one H1 title, found 0" in reasons_for(new, previous)


def test_missing_references_fails(previous):
    new = previous.replace("## References\n\n", "")
    assert reasons_for(new, previous) == ["structure: footnotes present but no '## References' section"]


def test_unclosed_fence_fails(previous):
    new = previous.replace("## Details", "```python\nprint('hi')\n\n## Details")
    reasons = reasons_for(new, previous)
    assert "structure: code fence opened on line 5 is never closed" in reasons


def test_empty_output_fails(previous):
    assert gate("  \n", previous, KNOWN) == ["empty output"]


def test_word_count_ignores_definitions(previous):
    assert word_count(previous) == word_count(previous.split("## References")[0]) + 1
