"""Noise that must not reach the wiki: memvault's own injected context and its own calls,
and acknowledgements that carry no knowledge.

memvault injects recalled memories (``<memory-recall>…</memory-recall>``) and its article
index (``<memvault-index>…</memvault-index>``) into assistant sessions; ingesting them back
would make the wiki cite itself. Conversations of memvault's own model calls are dropped
whole, recognised by the digests the engines record of each prompt they send
(memvault.hygiene.selfcalls), never by a string a message contains: a pasted prompt or a fetched page
may hold any marker. Acknowledgements are kept in the ledger but marked ``low_value`` so the
chunker can skip them.

Agent noise — what an assistant's app writes into a transcript that nobody said (Claude Code's
``<system-reminder>`` and local-command wrappers, API-error stand-ins, "[Request interrupted by
user]", Codex's injected context, claude.ai's "This block is not supported…") — follows one
table of rules per source format (``NOISE_RULES``). Two kinds of rule:

* ``message`` rules mark a whole message as noise at ingest. The flag is the ledger's
  ``messages.low_value`` column: the message is kept as written, and chunking, the index's
  recall units and so the articles leave it out (``WHERE NOT low_value``).
* ``block`` rules name a wrapper inside a message (a reminder prepended to what the person
  typed). The ledger keeps the text whole; `strip_noise` cuts the blocks where a message
  becomes chunk or recall-unit text, and a message with nothing else is marked as above.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Set
from functools import lru_cache

from memvault.models import Conversation, Message
from memvault.hygiene.selfcalls import prompt_digest

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

    ``own_prompts`` are the digests the engines recorded (memvault.hygiene.selfcalls); with none
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


NoiseRule = tuple[str, str, re.Pattern[str]]  # (name, "message" | "block", pattern)


def _tag(name: str) -> re.Pattern[str]:
    """A wrapper block ``<name …>…</name>`` (or an unclosed one running to the end of the text)."""
    return re.compile(rf"<{name}(?:\s[^>]*)?>.*?(?:</{name}>|\Z)\s*", re.DOTALL | re.IGNORECASE)


_CLAUDE_CODE_TAGS = ("system-reminder", "local-command-caveat", "command-name", "command-message", "command-args",
                     "command-contents", "local-command-stdout", "local-command-stderr", "bash-input",
                     "bash-stdout", "bash-stderr", "user-prompt-submit-hook")
_INTERRUPTED = re.compile(r"\[Request interrupted by user[^\]\n]*\]")
# What a format's app writes that nobody said. `message` patterns are matched at the start of a
# message's text (blocks cut first); `block` patterns are cut wherever they occur.
NOISE_RULES: dict[str, list[NoiseRule]] = {
    "claude-code": [
        *((f"cc-{t}", "block", _tag(t)) for t in _CLAUDE_CODE_TAGS),
        ("cc-caveat", "message", re.compile(r"Caveat: The messages below were generated by the user while running")),
        ("cc-interrupted", "message", _INTERRUPTED),
        # Written in the model's place when a call fails (lines flagged isApiErrorMessage).
        ("cc-api-error", "message", re.compile(r"(?:Please run /login · )?API Error: ?(?:\d{3}\b|[A-Z][\w ]*)")),
        ("cc-limit", "message", re.compile(r"(?:Claude AI usage limit reached|You've hit your (?:session|usage|weekly) limit"
                                           r"|Credit balance is too low|Invalid API key · )")),
        ("cc-no-response", "message", re.compile(r"No response requested\.\s*\Z")),
    ],
    "codex": [
        *((f"codex-{t}", "block", _tag(t)) for t in ("environment_context", "user_instructions", "turn_aborted",
                                                      "user_shell_command", "INSTRUCTIONS")),
        ("codex-agents-md", "message", re.compile(r"# AGENTS\.md instructions for ")),
        ("codex-interrupted", "message", _INTERRUPTED),
    ],
    "pi": [
        ("pi-aborted", "message", re.compile(r"(?:Request was aborted|Operation aborted)\.?\s*\Z")),
        ("pi-interrupted", "message", _INTERRUPTED),
    ],
    "chatgpt": [
        ("chatgpt-memory", "message", re.compile(r"Model set context (?:updated|write is pending confirmation)\.")),
        ("chatgpt-redacted", "message", re.compile(r"The output of this plugin was redacted\.")),
    ],
    "claude-ai": [
        # Tool and artifact blocks the export cannot show, as a fenced line or bare.
        ("claude-ai-unsupported", "block", re.compile(
            r"(?:```\w*[ \t]*\n)?This block is not supported on your current device yet\.[ \t]*(?:\n```[ \t]*)?\s*")),
    ],
}


def _rules(source: str | None, kind: str) -> list[tuple[str, re.Pattern[str]]]:
    tables = [NOISE_RULES.get(source, [])] if source is not None else list(NOISE_RULES.values())
    return [(name, pattern) for table in tables for name, k, pattern in table if k == kind]


def strip_noise(text: str, source: str | None = None) -> str:
    """``text`` without the noise blocks of ``source``'s format (every format's when None)."""
    if "<" not in text and "This block" not in text:
        return text  # the common case: no rule's block can start here
    out = text
    for _, pattern in _rules(source, "block"):
        out = pattern.sub("", out)
    return out.strip() if out is not text else text


def noise_rule(text: str, source: str | None = None) -> str | None:
    """The name of the rule that makes ``text`` (a whole message) noise, or None.

    A message is noise when a message rule matches its start once the blocks are cut, or when
    the blocks were all there was.
    """
    core = strip_noise(text, source)
    if core is not text and not core.strip():
        return next(name for name, pattern in _rules(source, "block") if pattern.search(text))
    for name, pattern in _rules(source, "message"):
        if pattern.match(core.lstrip()):
            return name
    return None


def mark_noise(conv: Conversation) -> int:
    """Mark ``conv``'s agent-noise messages ``low_value`` (see the module docstring); returns
    how many were marked. Tool results are judged too: a reminder rides on them as well."""
    marked = 0
    for message in conv.messages:
        if not message.low_value and noise_rule(message.text, conv.source) is not None:
            message.low_value = True
            marked += 1
    return marked


def noise_lines(text: str) -> list[int]:
    """1-based lines of ``text`` (an article) that hold agent noise of any format: an opening
    wrapper tag or the start of a message rule (lint and bench/wiki_quality.py count them)."""
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        # Quoted text is escaped in articles (`\<system-reminder>`): read it back first.
        plain = re.sub(r"\\(.)", r"\1", line).lstrip("> ").strip()
        plain = re.sub(r"^(?:[-*]|\d+\.)\s+", "", plain)
        if any(p.search(plain) for _, p in _rules(None, "block")) or any(
                p.search(plain) for _, p in _rules(None, "message")):
            out.append(n)
    return out


_TITLE_CHARS = 60
_TITLE_NOISE = re.compile(r"\s*(?:<[\w-]+[\s>]|/[a-z][\w:-]*(?:\s|$)|\[Request interrupted|Caveat: )", re.IGNORECASE)


def conversation_title(conv: Conversation) -> str:
    """``conv``'s title unless it is noise: a reminder block, a slash command (`/mode`), an
    interruption marker, a greeting ("Hey Mel, great to chat with you again!…"). Then the first
    sentence of a user message that says something (noise blocks cut; greetings,
    acknowledgements and commands skipped), at most 60 characters; or ""."""
    from memvault.naming.titles import is_filler  # titles loads nothing heavy until a phrase is ranked

    first = re.split(r"(?<=[.!?])\s+", " ".join(conv.title.split()), maxsplit=1)[0]
    if conv.title.strip() and not _TITLE_NOISE.match(conv.title) and not is_filler(first):
        return conv.title
    for message in conv.messages:
        if message.role != "user" or message.kind != "text" or message.low_value:
            continue
        for line in strip_noise(message.text, conv.source).splitlines():
            for sentence in re.split(r"(?<=[.!?])\s+", " ".join(line.split())):
                if sentence and not _TITLE_NOISE.match(sentence) and not is_low_value(sentence) \
                        and not is_filler(sentence):
                    return sentence if len(sentence) <= _TITLE_CHARS else \
                        sentence[:_TITLE_CHARS - 1].rsplit(" ", 1)[0] + "…"
    return conv.title if not _TITLE_NOISE.match(conv.title) else ""


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
