"""Noise that must not reach the wiki: memvault's own injected context and its own calls,
and acknowledgements that carry no knowledge.

memvault injects recalled memories (``<memory-recall>…</memory-recall>``) and its article
index (``<memvault-index>…</memvault-index>``) into assistant sessions; ingesting them back
would make the wiki cite itself. Conversations of memvault's own model calls are dropped
whole, recognised by the digests the engines record of each prompt they send
(memvault.selfcalls), never by a string a message contains: a pasted prompt or a fetched page
may hold any marker. Acknowledgements are kept in the ledger but marked ``low_value`` so the
chunker can skip them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Set
from functools import lru_cache

from memvault.models import Conversation, Message
from memvault.selfcalls import prompt_digest

# Still written at the top of every prompt, for a person reading a server's chat log; ingest
# does not trust it (anyone can write it), see is_own_conversation.
MEMVAULT_SELF_CALL_SENTINEL = "<!-- memvault:self -->"

_INJECTED_BLOCKS = re.compile(
    r"<(memory-recall|memvault-index)(?:\s[^>]*)?>.*?</\1>\s*", re.DOTALL | re.IGNORECASE
)
# A bare slash command (`/mode`, `/model opus`, `/clear`) drives the assistant's UI; it says
# nothing about a topic, so it must neither open a chunk nor name one.
BARE_COMMAND = r"/[a-z][\w:-]*(?:\s+[\w.:/@-]+){0,2}"
_BARE_COMMAND = re.compile(BARE_COMMAND)
# Whole-message acknowledgements (compared after lower-casing and trimming punctuation).
DEFAULT_LOW_VALUE_PATTERNS: list[str] = [
    r"(?:ok(?:ay)?|k|thanks?|thank you|thx|ty|cool|great|nice|perfect|got it|sounds good"
    r"|lgtm|done|continue|go ahead|go on)(?:\s+(?:so much|very much|a lot|again))?",
    r"(?:👍|🙏|🙂|😊|👌|✅|❤️)+",
    BARE_COMMAND,
]
_TRIM = " \t\r\n.!?,;:~"


def strip_memory_blocks(text: str) -> str:
    """``text`` without memvault's injected recall and index blocks; the rest is kept."""
    if "<m" not in text and "<M" not in text:
        return text  # the common case: no tag can start here (cheaper than lower-casing it all)
    lowered = text.lower()
    if "<memory-recall" not in lowered and "<memvault-index" not in lowered:
        return text  # no block, no regex pass
    return _INJECTED_BLOCKS.sub("", text).strip()


def is_own_conversation(conv: Conversation, own_prompts: Set[str]) -> bool:
    """True when a message of ``conv`` is, whole, a prompt memvault itself sent to a model.

    ``own_prompts`` are the digests the engines recorded (memvault.selfcalls); with none
    recorded, nothing is memvault's own.
    """
    if not own_prompts:
        return False
    return any(m.role in ("user", "system") and prompt_digest(m.text) in own_prompts for m in conv.messages)


def is_low_value(text: str, patterns: Iterable[str] | None = None) -> bool:
    """True for empty text or a bare acknowledgement such as "thanks!" or "👍"."""
    core = text.strip().lower().strip(_TRIM)
    if not core:
        return True
    # The setting adds to the built-in patterns (as documented), it does not replace them.
    return any(p.fullmatch(core) for p in _compiled(tuple(patterns or ())))


@lru_cache(maxsize=32)
def _compiled(extra: tuple[str, ...]) -> list[re.Pattern[str]]:
    """The built-in patterns plus ``extra``, compiled once (this runs for every message)."""
    return [re.compile(p) for p in (*DEFAULT_LOW_VALUE_PATTERNS, *extra)]


def mark_low_value(messages: list[Message], patterns: list[str] | None = None) -> list[Message]:
    """Set ``low_value`` on acknowledgement and empty messages, in place; returns the list.

    Only person- or model-written text is judged: a tool result saying "done" still records
    that something was done.
    """
    for message in messages:
        if message.kind == "text" and message.role in ("user", "assistant") and is_low_value(message.text, patterns):
            message.low_value = True
        elif not message.text.strip():
            message.low_value = True
    return messages


# Text that is not discussion: attachment placeholders as the parsers write them, and lines
# of git or build tool output pasted or echoed into a conversation.
_PLACEHOLDER = re.compile(r"\[(?:image|file|attachment|audio|video|pdf)\b[^\]]*\]", re.IGNORECASE)
_TOOL_OUTPUT = re.compile(
    r"\s*(?:(?:create|delete) mode \d{6} |\d+ files? changed|\[[\w./-]+ [0-9a-f]{7,40}\]|rename .+ \(\d+%\)$"
    r"|(?:Compiling|Finished|Running|Downloading|Downloaded|Installing|Collecting|Building|Updating|Locking)\s"
    r"|npm (?:WARN|ERR!|notice)|added \d+ packages?|To \S+\.git|remote: |Enumerating objects|Counting objects"
    r"|Compressing objects|Writing objects|Total \d+ |[0-9a-f]{7,40}\.\.[0-9a-f]{7,40} |\* \[new (?:tag|branch)\]"
    r"|On branch |Your branch is |nothing to commit|Changes (?:not staged|to be committed)|\s*modified: |\s*new file: )")
_ROLE_LINE = re.compile(r"(user|assistant|tool|system|attachment|summary): ?(.*)", re.DOTALL)
_PROSE_WORD = re.compile(r"[^\W\d_][\w'’-]*")
LOW_CONTENT_WORDS = 12  # fewer words of discussion than this, and a chunk is not a topic


def discussion_words(text: str) -> int:
    """Words a person or the assistant wrote in a rendered chunk (``role: text`` lines).

    Tool results, attachment placeholders, bare slash commands and lines of git or build
    output do not count: they are what a conversation handled, not what it said.
    """
    role, count = "user", 0
    for line in text.splitlines():
        m = _ROLE_LINE.match(line)
        if m:
            role, line = m.group(1), m.group(2)
        if role not in ("user", "assistant"):
            continue
        line = _PLACEHOLDER.sub(" ", line)
        if not line.strip() or _TOOL_OUTPUT.match(line) or _BARE_COMMAND.fullmatch(line.strip().lower()):
            continue
        count += len(_PROSE_WORD.findall(line))
    return count


def is_low_content(text: str, min_words: int = LOW_CONTENT_WORDS) -> bool:
    """True for a chunk that says too little to found an article topic: an image
    placeholder, a greeting, a bare command, git or build output without discussion."""
    return discussion_words(text) < min_words
