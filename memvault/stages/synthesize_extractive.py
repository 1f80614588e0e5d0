"""The no-model path of synthesize as pure functions: quote, head and compose an article.

The most informative sentences of each chunk are quoted verbatim (escaped so they render back
unchanged, memvault.markdown.verbatim) under a heading saying what the chunk is about, dated
(memvault.naming.titles), and cite the chunk's conversation. Nothing here reads a store: memvault.stages.synthesize
gathers the chunks and the article and writes the result.
"""

import hashlib
import re
from datetime import datetime
from typing import Any

import numpy as np

from memvault.ids import conv_ref
from memvault.markdown.artefacts import is_chatter
from memvault.markdown.conversation_page import citation_link
from memvault.markdown.footnotes import renumber
from memvault.markdown.leads import lead_sentence, refresh_lead
from memvault.markdown.verbatim import escape
from memvault.naming.headings import section_heading
from memvault.naming.phrase_similarity import PhraseEmbedder, similarity_to, unit_mean
from memvault.naming.titles import distinct_phrases, ranked_phrases
from stores.rows import ChunkRow
from memvault.stages.text import keywords, sentences, words

_ROLE = re.compile(r"^(user|assistant|tool|system|attachment|summary):\s*", re.I)
_TAIL = re.compile(r"^##\s+(See also|References)\s*$", re.I | re.M)


def date_of(value: Any) -> str:
    """A chunk's date as YYYY-MM-DD, or "undated"."""
    return value.strftime("%Y-%m-%d") if isinstance(value, datetime) else "undated"


def citation(chunk: ChunkRow, short: str, seq: int | None = None) -> str:
    """A footnote definition's text for ``chunk``: a link to its passage on the conversation's
    page (memvault.markdown.conversation_page) when ``seq`` (its first message) is known, else
    its conversation's id; then date, source and title, escaped as text (#26 §5)."""
    title = " ".join((chunk.conversation_title or chunk.label or "untitled").split())
    ref = citation_link(short, seq) if seq is not None else f"`{conv_ref(short)}`"
    return f"{ref} ({date_of(chunk.date)}, {escape(chunk.source)}) — {escape(title)}"


def extract(chunk_text: str, terms: set[str], n: int) -> list[str]:
    """The ``n`` most informative sentences of a chunk, in their original order, verbatim.

    Lines of tool output (a tool message and its continuation lines) are skipped, and so are
    sentences that read as an assistant's framing ("Let me know if…"): quoted in an article
    they would read as model chatter.
    """
    candidates = []
    role = ""
    for line in chunk_text.splitlines():
        opened = _ROLE.match(line)
        if opened:
            role = opened.group(1).lower()
        if role == "tool":
            continue
        body = _ROLE.sub("", line) if opened else line
        for s in sentences(body):
            if 40 <= len(s) <= 400 and not s.endswith("?") and "```" not in s and not is_chatter(s):
                candidates.append(s)
    scored = []
    for i, s in enumerate(candidates):
        ws = set(words(s))
        score = len(ws & terms) * 2 + sum(ch.isdigit() for ch in s) ** 0.5 + min(len(ws), 12) / 12
        scored.append((score, i, s))
    best = sorted(scored, key=lambda t: (-t[0], t[1]))[:n]
    return [s for _, _, s in sorted(best, key=lambda t: t[1])]


def quote(picked: list[str]) -> str:
    """Extracted sentences as one paragraph of Markdown that renders back to them unchanged."""
    return " ".join(escape(s) for s in picked)


def new_article(title: str, lead_terms: list[str], chunks: list[ChunkRow]) -> str:
    dates = sorted(date_of(c.date) for c in chunks)
    about = ", ".join(lead_terms[:-1]) + (" and " if len(lead_terms) > 1 else "") + lead_terms[-1] if lead_terms else title
    # The count and dates are rewritten from the citations once the sections are in (refresh_lead).
    lead = lead_sentence(f"**{escape(title)}**", len({c.conversation_id for c in chunks}), dates,
                         f", about {escape(about)}.")
    return f"# {title}\n\n{lead}\n\n## References\n"


def add_sections(text: str, sections: list[tuple[str, str, str]]) -> str:
    """Insert ``(heading, body, footnote_definition)`` sections before See also / References."""
    m = _TAIL.search(text)
    head, tail = (text[: m.start()], text[m.start():]) if m else (text.rstrip("\n") + "\n\n", "## References\n")
    body = head.rstrip("\n") + "\n\n"
    defs = []
    for heading, prose, definition in sections:
        body += f"## {heading}\n\n{prose}\n\n"
        defs.append(definition)
    tail = tail.rstrip("\n") + "\n"
    if not re.search(r"^##\s+References\s*$", tail, re.I | re.M):
        tail += "\n## References\n"
    return body + tail + "\n" + "\n".join(defs) + "\n"


def chunk_terms(chunks: list[ChunkRow], background: list[str]) -> set[str]:
    """The terms that make a sentence of these chunks informative (what `extract` scores by)."""
    return set(keywords([c.text for c in chunks], background, n=12, titles=[c.conversation_title or "" for c in chunks]))


def compose_article(previous: str | None, title: str, chunks: list[ChunkRow], background: list[str],
                    shorts: dict[str, str], sentences_per_chunk: int, embedder: PhraseEmbedder | None = None,
                    anchors: dict[str, int] | None = None, chunk_vectors: np.ndarray | None = None) -> str:
    """The extractive article: ``previous`` (or a new one) with a section per chunk that has
    something to quote; ``previous`` itself (or "") when none has.

    Each section is headed by what its chunk is about, dated, and quotes the chunk's most
    informative sentences verbatim (escaped so they render back unchanged), citing its
    conversation. With an ``embedder``, key phrases are weighed by how close they are to the
    chunks (the lead) or to the section's own chunk (its heading). ``anchors`` (chunk id →
    sequence number of its first message) make citations links to the conversation pages.
    ``chunk_vectors`` (one row per chunk: the vectors the chunk stage stored) stand for the
    chunks' meaning instead of embedding their texts again. Pure: tests call it directly.
    """
    texts = [c.text for c in chunks]
    titles = [c.conversation_title or "" for c in chunks]
    terms = chunk_terms(chunks, background)
    vectors = None
    if embedder is not None and texts:
        vectors = chunk_vectors if chunk_vectors is not None and len(chunk_vectors) == len(texts) else embedder.embed(texts)
    lead_similarity = similarity_to(embedder, unit_mean(vectors)) if embedder and vectors is not None else None
    lead_terms = distinct_phrases(ranked_phrases(texts, background, titles, similarity=lead_similarity), 3,
                                  exclude=title)
    text = previous or new_article(title, lead_terms, chunks)
    # Headings already in the article, dates aside: a new section never repeats one.
    taken = {re.sub(r"\s*\(\d{4}-\d\d-\d\d\)$|\s*\(undated\)$", "", h).casefold()
             for h in re.findall(r"^##\s+(.+?)\s*$", text, re.M)}
    sections = []
    for n, c in enumerate(chunks, start=1):
        picked = extract(c.text, terms, sentences_per_chunk)
        if not picked:
            continue
        label = f"new{c.id[:8]}{n}"
        own = similarity_to(embedder, vectors[n - 1]) if embedder and vectors is not None else None
        heading = section_heading(c.label, c.text, background, title, date_of(c.date), c.conversation_title, taken, own)
        taken.add(re.sub(r"\s*\([^()]*\)$", "", heading).casefold())
        sections.append((escape(heading), quote(picked) + f"[^{label}]",
                         f"[^{label}]: {citation(c, shorts[c.conversation_id], (anchors or {}).get(c.id))}"))
    if not sections:
        return previous or ""
    new, _ = renumber(add_sections(text, sections))
    return refresh_lead(new)


# Part of every no-model input hash: a newer extractive synthesis may succeed where this one
# was rejected, so changing how articles are composed unparks what it parked.
EXTRACTIVE_VERSION = "extractive-3"


def extractive_input(previous: str | None, chunk_ids: list[str]) -> str:
    """The hash of everything the no-model path's result depends on: the article as it is on
    disk, the chunks to weave in, and the version of the composer."""
    return hashlib.sha256("\x1f".join([EXTRACTIVE_VERSION, previous or "", *sorted(chunk_ids)]).encode()).hexdigest()


def no_model_reasons(reasons: list[str]) -> list[str]:
    """Gate reasons worded for the no-model path: nothing there came from a model."""
    return [r.replace("model chatter", "text that reads as an assistant's framing (no model ran)", 1)
            for r in reasons]
