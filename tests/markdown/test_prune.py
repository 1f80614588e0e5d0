"""Forgetting a conversation's words: passages whose every marker cites only it go; text also
citing another conversation, text with no marker and code stay; emptied items and sections go."""

from memvault.markdown.prune import prune, prune_passages

ARTICLE = """# Tides

The moon pulls the sea. Twice a day.[^1] Storms add surge.[^2] A person wrote this line.

## Forgotten

Only from the forgotten one.[^1]

- an item from it[^1]

## Details

Both say so.[^3] Also forgotten.[^1] See `x[^1]` in code.

## References

[^1]: `conv:aaaaaaaa` (2026-05-10, pi) — gone
[^2]: `conv:bbbbbbbb` (2026-05-11, codex) — other
[^3]: `conv:aaaaaaaa` (2026-05-10, pi) — gone; `conv:bbbbbbbb` (2026-05-11, codex) — other
"""


def _forgotten(cited: str) -> bool:
    return "aaaaaaaa0000".startswith(cited.lower())


def test_only_solely_supported_prose_goes() -> None:
    out = prune(ARTICLE, _forgotten)
    assert out.sentences == 5 and out.sections == 1
    assert "moon" not in out.text and "Twice" not in out.text and "Only from" not in out.text
    assert "an item from it" not in out.text and "Also forgotten" not in out.text and "## Forgotten" not in out.text
    for kept in ("Storms add surge.[^2] A person wrote this line.", "Both say so.[^3]", "## Details",
                 "See `x[^1]` in code.", "## References", "\n\n## Details\n\nBoth"):
        assert kept in out.text, kept
    assert "\n\n\n" not in out.text


def test_passages_and_adjacent_markers() -> None:
    assert prune_passages("A.[^1][^2] B.[^1]", {"1"}) == ("A.[^1][^2]", 1)
    assert prune_passages("A. B.[^1], [^3] C.", {"1", "3"}) == ("C.", 2)
    assert prune_passages("No markers here.", {"1"}) == ("No markers here.", 0)


def test_nothing_cited_by_it_changes_nothing() -> None:
    out = prune(ARTICLE, lambda c: c.lower().startswith("cccccccc"))
    assert out.text == ARTICLE and out.sentences == 0
