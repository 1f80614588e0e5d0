"""Small text helpers shared by the no-model stages: sentences, keywords, labels."""

import math
import re
from collections import Counter

from memvault.hygiene.noise import is_low_value

# The embedding model reads at most 256 word pieces (~1,000-1,500 characters of prose) and
# truncates the rest, so text past 2,000 characters never changes a vector: cutting it first
# keeps the tokenizer from working through long messages and pasted logs for nothing.
EMBED_CHARS = 2000

_SENT = re.compile(r"(?<=[.!?。！？])\s+")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'+-]{2,}")
STOP = set("""
the and for with that this from have has had you your are was were but not can could would should will
just about into what when where which while there their them they then than also some any all our out
its it's let's lets i'm i've we're you're don't doesn't didn't isn't it’s use using used make makes made like
want need one two get got how why who does did done yes okay sure thanks thank please here now new more most
very much many well good great really still each other over only same such may might must shall onto
user assistant tool call result output file files code run runs running step steps way thing things
""".split())


def sentences(text: str) -> list[str]:
    """Split prose into sentences (Latin and CJK terminators)."""
    out: list[str] = []
    for block in text.split("\n"):
        block = block.strip(" -*#>\t")
        if block:
            out.extend(s.strip() for s in _SENT.split(block) if s.strip())
    return out


def words(text: str) -> list[str]:
    return [w.lower().strip("'-") for w in _WORD.findall(text) if w.lower() not in STOP]


def keywords(docs: list[str], background: list[str], n: int = 3, titles: list[str] | None = None) -> list[str]:
    """The ``n`` terms most distinctive of ``docs`` against ``background``.

    A term scores by the share of ``docs`` that use it times its inverse document frequency
    in ``background`` (which should include documents on other topics); a term that also
    appears in the conversations' ``titles`` is what people call the topic, so it counts
    double.
    """
    df_group: Counter[str] = Counter()
    for d in docs:
        df_group.update(set(words(d)))
    df: Counter[str] = Counter()
    for d in background:
        df.update(set(words(d)))
    in_titles: Counter[str] = Counter()
    for t in titles or []:
        in_titles.update(set(words(t)))
    total = max(len(background), 1)
    need = min(2, len(docs))
    scored = {
        w: (c / len(docs)) * math.log((1 + total) / (1 + df[w])) * (1 + in_titles[w] / max(len(titles or []), 1) * 2)
        for w, c in df_group.items() if c >= need
    }
    return [w for w, _ in sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]


def surface_form(word: str, docs: list[str]) -> str:
    """The most common spelling of ``word`` in ``docs`` (keeps `PostgreSQL`, `Lisbon`)."""
    forms: Counter[str] = Counter(m for d in docs for m in _WORD.findall(d) if m.lower().strip("'-") == word)
    best = forms.most_common(1)[0][0] if forms else word
    return best if any(c.isupper() for c in best) else best.capitalize()


def label(text: str, limit: int = 80) -> str:
    """A one-line label: the first sentence of ``text`` that is not a bare acknowledgement
    ("Thanks. What about retention?" is labelled by its question), cut at a word boundary."""
    flat = " ".join(text.split())
    found = sentences(flat) or [flat]
    first = next((s for s in found if not is_low_value(s)), found[0])
    return first if len(first) <= limit else first[: limit - 1].rsplit(" ", 1)[0] + "…"
