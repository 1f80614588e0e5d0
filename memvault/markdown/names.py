"""Article names: title ⇄ file stem, and paths that cannot escape the vault.

An article's file name is its title with spaces turned into underscores (`Topic_Name.md`),
sanitized so that any title a model or a person writes yields a safe, portable file name:
no path separators or `..`, no control or bidi characters, NFC, no Windows device names,
bounded length, never empty.
"""

import re
import unicodedata
from pathlib import Path

from memvault.markdown.wikilinks import title_of

MAX_STEM_BYTES = 120
FALLBACK_STEM = "Untitled"
# Characters that break paths on some OS, or wikilink syntax in Obsidian (`# ^ [ ] |`).
_FORBIDDEN = set('/\\:*?"<>|#^[]')
_RESERVED = {"CON", "PRN", "AUX", "NUL"} | {f"{p}{i}" for p in ("COM", "LPT") for i in range(1, 10)}


def _clean_chars(text: str) -> str:
    """NFC, drop control/format characters (NUL, bidi marks, zero-widths), forbidden → space."""
    out = []
    for ch in unicodedata.normalize("NFC", text):
        category = unicodedata.category(ch)
        if category in ("Cc", "Cf", "Cs", "Co", "Cn"):
            # Tabs and newlines separate words; everything else in these classes vanishes.
            out.append(" " if ch in "\t\n\r\v\f" else "")
        elif ch in _FORBIDDEN or category in ("Zl", "Zp", "Zs"):
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)


def _truncate_utf8(text: str, limit: int) -> str:
    """Cut ``text`` to at most ``limit`` UTF-8 bytes on a character boundary."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", errors="ignore")


def title_to_stem(title: str) -> str:
    """The file stem for an article title: spaces → underscores, sanitized, never empty."""
    text = _clean_chars(title)
    text = re.sub(r"\.{2,}", ".", text)
    text = " ".join(text.split())
    text = re.sub(r"_+", "_", text.replace(" ", "_"))
    # Removing a control character can bring a base letter and its combining mark together.
    text = _truncate_utf8(unicodedata.normalize("NFC", text), MAX_STEM_BYTES)
    # Leading dots hide files; trailing dots/spaces are stripped by Windows.
    text = text.strip("._ ")
    if not text:
        return FALLBACK_STEM
    head, dot, rest = text.partition(".")
    if head.upper() in _RESERVED:
        # Windows reserves the device name before any extension too ("con.txt"): break the name itself.
        text = f"{head}_{dot}{rest}"
    return text


def stem_to_title(stem: str) -> str:
    """The display title for a file stem (underscores → spaces)."""
    return " ".join(stem.replace("_", " ").split())


def safe_path(root: Path, stem: str, suffix: str = ".md") -> Path:
    """``root/stem+suffix``, guaranteed to be a direct child of ``root``.

    Raises ValueError when the stem is not a plain file name (separators, ``..``, NUL,
    empty) or when the resolved path (after symlinks) would land outside ``root``.
    """
    if not stem or "\x00" in stem or "/" in stem or "\\" in stem or stem in (".", ".."):
        raise ValueError(f"unsafe article name {stem!r}: use title_to_stem() to make a file name")
    if ".." in stem:
        raise ValueError(f"unsafe article name {stem!r}: '..' is not allowed in a file name")
    base = root.resolve()
    path = (base / f"{stem}{suffix}").resolve()
    if path.parent != base:
        raise ValueError(f"article path {path} escapes the vault folder {base}")
    return path


def unique_stem(stem: str, existing: set[str]) -> str:
    """``stem``, or ``stem_2``, ``stem_3``… — the first not in ``existing`` (case-insensitive)."""
    taken = {s.casefold() for s in existing}
    if stem.casefold() not in taken:
        return stem
    n = 2
    while f"{stem}_{n}".casefold() in taken:
        n += 1
    return f"{stem}_{n}"


def names_file(title: str, stem: str) -> bool:
    """Whether ``stem`` is the file name of ``title``: its sanitized form, or that form with the
    `_2`, `_3`… suffix given to the second of two titles that sanitize alike."""
    expected = title_to_stem(title)
    return stem == expected or re.fullmatch(re.escape(expected) + r"_(?:[2-9]|[1-9]\d+)", stem) is not None


def article_title(stem: str, text: str, trust_h1: bool = False) -> str:
    """The title to keep for an article: its H1 when that names this file (or always, with
    ``trust_h1``, so a person's title is never rewritten), else the stem's spelling."""
    title = title_of(text)
    if title and (trust_h1 or names_file(title, stem)):
        return title
    return stem_to_title(stem)
