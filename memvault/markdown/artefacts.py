"""Recognize model chatter: preambles, refusals and trailing commentary around an article.

A paragraph is chatter when it opens the way assistants open a reply ("Sure,", "Certainly!",
"As an AI…", "I cannot…", "I'm sorry…"), announces the article ("Here is the updated
article:"), or closes one ("Let me know if…", "I hope this helps"). "Here is" alone is
ordinary prose ("Here is where the design diverges"), so it counts only when the paragraph
is short and points at the article or ends with a colon.
"""

import re

from memvault.markdown.scan import Doc

_OPENERS = re.compile(
    r"^(?:sure[,!.]|certainly[,!.]|of course[,!.]|absolutely[,!.]|great[,!.] here|okay[,!.]|ok[,!.]"
    r"|as an ai\b|as a language model\b|i (?:cannot|can't|can not|am unable|won't|am not able)\b"
    r"|i'm (?:sorry|unable|not able)\b|i am sorry\b|i apologi[sz]e\b|unfortunately, i\b)",
    re.IGNORECASE,
)
_ANNOUNCE = re.compile(r"^(?:here(?:'s| is| are)|below is|the following is)\b", re.IGNORECASE)
_ARTICLE_WORDS = re.compile(r"\b(?:article|version|draft|revision|rewrite|update[sd]?|revised|markdown)\b", re.IGNORECASE)
_ANYWHERE = re.compile(
    r"\b(?:(?:updated|revised|rewritten|new) (?:article|version)\b(?! (?:of|to|in|on))|let me know if|i hope this helps"
    r"|feel free to (?:ask|let)|as an ai(?: language model)?\b)",
    re.IGNORECASE,
)
_MARKUP = re.compile(r"^[\s>*_#-]+")
SHORT_WORDS = 40


def is_chatter(paragraph: str) -> bool:
    """Whether one paragraph of text reads as a model's framing rather than article prose."""
    text = _MARKUP.sub("", " ".join(paragraph.split()))
    if not text:
        return False
    if _OPENERS.match(text):
        return True
    short = len(text.split()) <= SHORT_WORDS
    if _ANNOUNCE.match(text) and short and (text.endswith(":") or _ARTICLE_WORDS.search(text)):
        return True
    return short and bool(_ANYWHERE.search(text))


def chatter(text: str) -> list[tuple[int, str]]:
    """Top-level paragraphs that are chatter: (1-based line, first 80 characters)."""
    doc = Doc(text)
    out = []
    for block in doc.blocks():
        if block.kind != "paragraph":
            continue
        para = " ".join(doc.lines[block.start : block.end])
        if is_chatter(para):
            out.append((doc.source_line(block.start), " ".join(para.split())[:80]))
    return out
