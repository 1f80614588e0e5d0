"""The writing system a text is in, so one article never mixes languages of different scripts.

Cheap and deterministic: letters are counted per Unicode script over the discussion (role
prefixes and fenced code aside, which are Latin whatever the language). CJK characters weigh
more than Latin letters, since one carries about as much as a short word. Han with kana is
Japanese; Han alone is Chinese. Languages that share a script (English and French) are not
told apart here: the embedding keeps such topics apart well enough.
"""

import re
import unicodedata
from collections import Counter

_ROLE = re.compile(r"^(?:user|assistant|tool|system|attachment|summary):\s*", re.M)
_FENCED = re.compile(r"^\s*(```|~~~).*?^\s*\1", re.M | re.S)
_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK", "ARABIC", "HEBREW", "DEVANAGARI", "THAI", "HANGUL", "HIRAGANA",
            "KATAKANA", "CJK", "BENGALI", "TAMIL", "GEORGIAN", "ARMENIAN", "ETHIOPIC")
_WIDE = {"HANGUL", "HIRAGANA", "KATAKANA", "CJK"}


def script_counts(text: str, limit: int = 20_000) -> Counter[str]:
    """Weighted letter counts per script of ``text`` (its first ``limit`` characters)."""
    body = _FENCED.sub(" ", _ROLE.sub("", text[:limit]))
    counts: Counter[str] = Counter()
    for ch in body:
        if not ch.isalpha():
            continue
        if ch.isascii():
            counts["LATIN"] += 1
            continue
        name = unicodedata.name(ch, "")
        script = next((s for s in _SCRIPTS if name.startswith(s)), "OTHER")
        counts[script] += 3 if script in _WIDE else 1
    return counts


def script_of(text: str) -> str:
    """The main script of ``text``: "latin", "cyrillic", "chinese", "japanese", "korean", …;
    "none" when it has no letters."""
    counts = script_counts(text)
    if not counts:
        return "none"
    kana = counts["HIRAGANA"] + counts["KATAKANA"]
    if kana and kana >= 0.1 * (kana + counts["CJK"]):
        counts["JAPANESE"] = kana + counts.pop("CJK", 0)
        counts.pop("HIRAGANA", None)
        counts.pop("KATAKANA", None)
    best = counts.most_common(1)[0][0]
    return {"CJK": "chinese", "HANGUL": "korean"}.get(best, best.lower())


def mixed(scripts: list[str]) -> bool:
    """Whether texts of these scripts would mix languages ("none" mixes with anything)."""
    return len({s for s in scripts if s != "none"}) > 1
