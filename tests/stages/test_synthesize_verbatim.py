"""Extractive synthesis quotes transcripts as written: every sentence it picks renders in the
article as it renders in the transcript (an assistant's `**bold**` stays bold, `[docs](https://…)`
a link), after wikify and normalize too — while what would break the article or the vault
(footnote references, wikilinks, HTML, embeds, non-http links, block markers, emphasis left
open) is shown as the characters it is, never turned into a footnote, a link or a tag."""

import html
import os
import re
from datetime import datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from mdit_py_plugins.footnote import footnote_plugin

from memvault.markdown.footnotes import check_bijection
from memvault.markdown.verbatim import escape, needless_escapes
from memvault.markdown.wikilinks import build_known, find_links
from stores.rows import ChunkRow
from memvault.stages.normalize import normalize_text
from memvault.stages.synthesize_extractive import chunk_terms, compose_article, extract
from memvault.stages.wikify import clean_text

TITLE = "Home Lab Backups"
SENTENCES_PER_CHUNK = 3
# What Obsidian-like readers parse: CommonMark, footnotes, tables, strikethrough.
RENDER = MarkdownIt("commonmark").enable(["table", "strikethrough"]).use(footnote_plugin)
_TAG = re.compile(r"<[^>]*>")

WORDS = st.sampled_from(["backup", "the", "stanza", "restore", "nightly", "retention", "runs", "NAS", "pantry",
                         "Postgres", "archive", "keeps", "weekly", "full", "checksum"])
MARKUP = st.sampled_from([
    "pgbackrest[48211]: ERROR: [041]", "[^1]", "[^note]", "[[Home Lab Backups]]", "[[Nowhere|there]]",
    "*starred*", "_under_", "__dunder__", "max_attempts", "`code`", "<b>bold</b>", "<https://example.org>",
    "&amp;", "&#65;", "==mark==", "%%hidden%%", "$x^2$", "~~gone~~", "a|b", "#tag", "\\", "\\[", "![alt](x.png)",
    "[text](https://example.org)", "[ref]", "{curly}", "C:\\temp\\x", "2 * 3 = 6", "<!-- c -->", "^block",
])
LEADING = st.sampled_from(["", "", "1. ", "2) ", "- ", "+ ", "> ", "# ", "= ", "| ", "<", "* ", "~~~ "])
NOISE = st.text(alphabet="[]^*_`<>&!|~=%$#\\(){}:ab -", min_size=1, max_size=8)


@st.composite
def sentence(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.one_of(WORDS, WORDS, MARKUP, NOISE), min_size=8, max_size=18))
    text = draw(LEADING) + " ".join(parts).strip()
    return text + draw(st.sampled_from([".", ".", "!", ""]))


@st.composite
def chunks(draw: st.DrawFn) -> list[ChunkRow]:
    out = []
    for n in range(draw(st.integers(1, 3))):
        lines = []
        for role in draw(st.lists(st.sampled_from(["user", "assistant"]), min_size=1, max_size=3)):
            lines.append(f"{role}: " + " ".join(draw(st.lists(sentence(), min_size=1, max_size=3))))
        out.append(ChunkRow(id=f"{n:032x}", conversation_id=f"c{n}", label=None, text="\n".join(lines),
                            message_ids=("m1",), source="claude-code", conversation_title="Backups on the Pi",
                            date=datetime(2026, 9, 8 + n)))
    return out


def rendered_text(markdown: str) -> str:
    return html.unescape(_TAG.sub("", RENDER.render(markdown)))


# What `escape` may change: constructs that break the article or the vault, and emphasis
# left open (it would pair with the next sentence). A sentence with none renders unchanged.
_UNSAFE = re.compile(r"<[A-Za-z/!?]|\[\^|\[\[|!\[|%%|\$[^\s\d]|&#?\w+;|\\|`|\]$|\]\]|~~|==|\]\(")
_LEADING_MARK = re.compile(r"^(?:#|>|[-+*=|]|\d+[.)]|~~~|<)")


def _open_bracket_left(s: str) -> bool:
    """A `[` with no `]` after it: escaped by design (it would pair with a `]` of the next
    sentence of the paragraph and make a link of everything between)."""
    depth = 0
    for ch in s:
        if ch == "[":
            depth += 1
        elif ch == "]" and depth:
            depth -= 1
    return depth > 0


def unchanged_when_safe(s: str) -> None:
    """The round trip: a quote without unsafe constructs renders exactly as its transcript."""
    if _UNSAFE.search(s) or _LEADING_MARK.match(s) or re.search(r"[*_]", s) or _open_bracket_left(s):
        return
    assert escape(s) == s
    assert rendered_text(escape(s)) == rendered_text(s)


def pipeline(chunk_rows: list[ChunkRow]) -> str:
    """The article as synthesize writes it, then as wikify and normalize leave it."""
    shorts = {c.conversation_id: f"{i:08x}" for i, c in enumerate(chunk_rows, start=10)}
    background = [c.text for c in chunk_rows]
    article = compose_article(None, TITLE, chunk_rows, background, shorts, SENTENCES_PER_CHUNK)
    cleaned, _ = clean_text(article, TITLE)
    final, _, _ = normalize_text(cleaned, build_known(["Home_Lab_Backups"]))
    return final


def check_verbatim(chunk_rows: list[ChunkRow]) -> None:
    final = pipeline(chunk_rows)
    text = rendered_text(final)
    terms = chunk_terms(chunk_rows, [c.text for c in chunk_rows])
    for c in chunk_rows:
        for s in extract(c.text, terms, SENTENCES_PER_CHUNK):
            assert s in c.text  # a sentence of the transcript itself
            shown = rendered_text(escape(s)).strip()
            assert shown in text, f"{s!r} does not render in the article as alone:\n{final}"
            unchanged_when_safe(s)
            assert needless_escapes(escape(s)) == 0
    # Quoted text never becomes a wikilink, a footnote, HTML or an embed: the only footnotes
    # are the citations, the only links http(s) ones.
    assert find_links(final) == []
    page = RENDER.render(final)
    assert "<img" not in page and "<iframe" not in page and "<b>" not in page
    assert all(h.startswith(("http://", "https://", "file:", "#fn")) for h in re.findall(r'href="([^"]*)"', page))
    # One citation per chunk that had a sentence to quote (a chunk with none adds no section).
    quoting = sum(bool(extract(c.text, terms, SENTENCES_PER_CHUNK)) for c in chunk_rows)
    assert RENDER.render(final).count('class="footnote-ref"') == quoting
    assert check_bijection(final) == []


def test_log_lines_and_brackets_survive() -> None:
    row = ChunkRow(id="a" * 32, conversation_id="c1", label=None,
                   text="user: The backup failed last night with pgbackrest[48211]: ERROR: [041] on the stanza.\n"
                        "assistant: Your notes say [^1] and [[Home Lab]] but the *real* cause is <missing> & old.",
                   message_ids=("m1",), source="pi", conversation_title="Backups", date=datetime(2026, 9, 8))
    check_verbatim([row])
    final = pipeline([row])
    assert "pgbackrest[48211]: ERROR: [041]" in rendered_text(final)
    # What breaks structure is shown as written; the assistant's emphasis stays emphasis.
    assert "Your notes say [^1] and [[Home Lab]] but the real cause is <missing> & old." in rendered_text(final)
    assert "*real*" in final and "\\*real" not in final


def test_markdown_the_transcript_wrote_stays_markdown() -> None:
    """#25: `**August 26**` and `[Glean Follow-up…](https://…)` were shown as literal markup."""
    assert escape("The launch moved to **August 26** after the review.") == \
        "The launch moved to **August 26** after the review."
    link = "See [Glean Follow-up notes](https://example.org/glean) for the summary."
    assert escape(link) == link
    assert escape("Use `repo1-retention-full=14` and keep max_attempts at 3.") == \
        "Use `repo1-retention-full=14` and keep max_attempts at 3."


def test_vault_safety_of_quoted_text() -> None:
    """#26 §5: no HTML, no remote embeds, no javascript: or other non-http links from a transcript."""
    hostile = ('Look <iframe src="https://evil.example/x"></iframe> and ![](https://evil.example/beacon.png) '
               'then [click](javascript:alert(1)) or [data](data:text/html,hi) or ![[Secret]] <!-- c --> &copy;')
    page = RENDER.render(escape(hostile))
    assert "<iframe" not in page and "<img" not in page and "<!--" not in page
    assert re.findall(r'href="([^"]*)"', page) == []
    assert "©" not in rendered_text(escape(hostile))
    assert rendered_text(escape(hostile)).strip() == hostile


# Derandomized: the same 120 examples in every run, so CI never meets a new one by chance
# (MEMVAULT_HYPOTHESIS_EXAMPLES=5000 with `--hypothesis-seed=N` explores further by hand).
@settings(max_examples=int(os.environ.get("MEMVAULT_HYPOTHESIS_EXAMPLES", "120")),
          derandomize="MEMVAULT_HYPOTHESIS_EXAMPLES" not in os.environ, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(chunks())
def test_every_extracted_sentence_renders_verbatim(chunk_rows: list[ChunkRow]) -> None:
    check_verbatim(chunk_rows)
