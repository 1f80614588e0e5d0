"""Section headings a person would choose: what a section's chunk is about, dated.

A heading is a short topic label (the model path's), the conversation's own title when it is
about this chunk, or the chunk's best key phrase (memvault.naming.titles) that is not the article's
title — ≤ 60 characters with the date beside it, never a first sentence cut with "…", never
the name of the assistant the conversation was held with.
"""

from memvault.naming.phrase_similarity import Similarity
from memvault.naming.titles import _STOP, _UNICODE_WORD, PHRASE_CHARS, _tokens, is_filler, is_source_name, ranked_phrases


def _short_label(label: str | None) -> str | None:
    """A chunk label that is already a heading (a model's topic label), not a cut sentence."""
    text = " ".join((label or "").replace("#", " ").split())
    if not text or len(text) > PHRASE_CHARS or "…" in text or text.endswith((".", "?", "!", ":", ",", ";")):
        return None
    if len(text.split()) > 7 or not acceptable_heading(text):
        return None
    return text


def acceptable_heading(text: str) -> bool:
    """Whether a label can stand as a heading: some non-generic word, no markup or paths."""
    if any(ch in text for ch in "/\\[]<>`|") or is_source_name(text) or is_filler(text):
        return False
    return any(w.lower() not in _STOP for w in _UNICODE_WORD.findall(text))


def _usable_title(title: str | None, text: str) -> str | None:
    """A conversation title that can head this chunk's section: short, whole (not cut with
    "…"), and about this chunk (most of its words are in it, so a conversation that changed
    topic does not lend its title to the other topic)."""
    name = " ".join((title or "").split())
    if not name or len(name) > PHRASE_CHARS or "…" in name or name.endswith((".", "?", "!", ",", ";", ":")):
        return None
    if not acceptable_heading(name):
        return None
    content = {w for w in _tokens(name) if w not in _STOP}
    if not content:
        # A title in another script ("数据库备份"): about this chunk when most of its letters are in it.
        letters = [ch for ch in name if ch.isalpha()]
        return name if letters and sum(ch in text for ch in letters) >= 0.75 * len(letters) else None
    present = set(_tokens(text))
    # "Backing up Postgres" is about a chunk that says "backups": words match on their stem.
    found = sum(w in present or any(p.startswith(w[:max(4, len(w) - 3)]) for p in present) for w in content)
    return name if content and found >= 0.75 * len(content) else None


def section_heading(label: str | None, text: str, background: list[str], title: str, date: str,
                    conversation_title: str | None = None, taken: set[str] | None = None,
                    similarity: Similarity | None = None) -> str:
    """A section's heading: what its chunk is about (≤ 60 characters with ``date`` beside it).

    In order: a short topic label (the model path's); the conversation's own title when it
    fits and is about this chunk; the chunk's best key phrase that is not the article's own
    ``title``, weighed by its ``similarity`` to the chunk when given. Never the name of the
    assistant the conversation was held with. ``taken`` (casefolded) are headings the
    article already has, dates aside.
    """
    taken = taken if taken is not None else set()
    about = _short_label(label)
    if about is None or about.casefold() in taken:
        about = _usable_title(conversation_title, text)
    if about is None or about.casefold() in taken:
        about = None
        own = title.casefold()
        for phrase in ranked_phrases([text], background, top=20, similarity=similarity):
            key = phrase.casefold()
            if key not in own and own not in key and key not in taken:
                about = phrase[:1].upper() + phrase[1:]
                break
    return f"{about or 'Notes'} ({date})"
