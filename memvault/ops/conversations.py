"""Browsing what memvault holds: list conversations, read one back (`memvault conversations`,
`memvault show`, the HTTP API's `/conversations` and the web page).

Read-only: the ledger is opened read-only for the length of one call and closed at once (a
held connection would keep a writer out), and the writer lock is never taken. While a run
holds the ledger, :class:`~memvault.errors.LedgerBusy` says who writes; recall and the
article tools still work then, since they never read the ledger.
"""

import re
from datetime import datetime, timezone
from memvault.errors import AmbiguousIdError, NotFoundError, UsageError
from memvault.ids import conv_ref, short_ids
from memvault.ops.results import ConversationLine, ConversationOut, MessageOut
from memvault.recall.scope import parse_day
from memvault.config.settings import Settings
from memvault.sources.kinds import SOURCE_KINDS
from stores.rows import ConversationSummary, MessageRow

CONVERSATION_SOURCES: tuple[str, ...] = SOURCE_KINDS
# Messages that are machinery, not talk: shown as one line unless asked for in full.
FOLDED_KINDS = frozenset({"tool_call", "tool_result", "meta"})
FOLD_CHARS = 120
_HEX = re.compile(r"[0-9a-f]{4,64}")


def conversation_key(ref: str) -> str:
    """`conv:1a2b3c4d`, `1a2b3c4d`, a full id or a backticked citation → the lowercase hex prefix."""
    key = ref.strip().strip("`").strip().lower().removeprefix("conv:")
    if not _HEX.fullmatch(key):
        raise UsageError(f"{ref!r} is not a conversation id: give conv:<hex> with at least 4 hex digits, as "
                         "`memvault conversations` and article citations show it (e.g. conv:1a2b3c4d)")
    return key


def _iso(ts: datetime | None) -> str | None:
    """A ledger time (naive UTC) as ISO 8601 with its zone."""
    return None if ts is None else ts.replace(tzinfo=timezone.utc).isoformat().replace("+00:00", "Z")


def summary_dict(row: ConversationSummary, short: str) -> ConversationLine:
    """The JSON form of one list line (also the head of `show --json`)."""
    return {"id": row.id, "short_id": short, "ref": conv_ref(short), "date": _iso(row.date),
            "started_at": _iso(row.started_at), "updated_at": _iso(row.updated_at), "source": row.source,
            "project": row.project, "title": row.title or "", "messages": row.messages, "ignored": row.ignored}


def list_conversations(settings: Settings, project: str | None = None, source: str | None = None,
                       since: str | datetime | None = None, until: str | datetime | None = None,
                       limit: int | None = None) -> list[ConversationLine]:
    """Conversations newest first, as dicts (see :func:`summary_dict`); ``limit`` None or 0: all.

    ``UsageError`` for an unknown source or a bad date; ``LedgerBusy`` while a writer holds the ledger.
    """
    from memvault.ops.home import require_home
    from stores.ledger import Ledger

    require_home(settings.home)
    src = (source or "").strip() or None
    if src is not None and src not in CONVERSATION_SOURCES:
        raise UsageError(f"unknown source {source!r} — one of {', '.join(CONVERSATION_SOURCES)}")
    lo, hi = parse_day(since, "--since"), parse_day(until, "--until", end=True)
    if lo is not None and hi is not None and lo > hi:
        raise UsageError(f"--since {since} is after --until {until}")
    if limit is not None and limit < 0:
        raise UsageError(f"--limit {limit} is negative — give a count, or 0 for every conversation")
    if not settings.ledger_path.exists():
        return []  # nothing ingested yet; a read-only open must not create the file
    with Ledger.open(settings, read_only=True) as ledger:
        rows = ledger.list_conversations((project or "").strip() or None, src, lo, hi, limit or None)
        shorts = short_ids(ledger.conversation_ids())
    return [summary_dict(r, shorts[r.id]) for r in rows]


def show_conversation(settings: Settings, ref: str) -> ConversationOut:
    """One conversation with the messages of its active thread, root first (see
    :func:`show_conversations`)."""
    return show_conversations(settings, [ref])[0]


def show_conversations(settings: Settings, refs: list[str]) -> list[ConversationOut]:
    """Conversations with the messages of their active threads, root first, in ``refs`` order.

    A ref is `conv:<prefix>`, a bare prefix (≥ 4 hex) or a full id. Every ref is resolved
    before any is read: ``NotFoundError`` names every unknown one, ``AmbiguousIdError`` every
    prefix of several (with the candidates), ``UsageError`` one that is not hex.
    """
    from memvault.ops.home import require_home
    from stores.ledger import Ledger

    require_home(settings.home)
    keys = [conversation_key(ref) for ref in refs]
    if not settings.ledger_path.exists():
        raise NotFoundError(f"no conversation {', '.join(r.strip() for r in refs)}: nothing is ingested yet — "
                            "run `memvault ingest PATH`")
    with Ledger.open(settings, read_only=True) as ledger:
        ids = ledger.conversation_ids()
        found: list[tuple[str, ConversationSummary | None, list[MessageRow]]] = []
        unknown: list[str] = []
        ambiguous: list[str] = []
        shorts = short_ids(ids)
        for ref, key in zip(refs, keys):
            hits = [cid for cid in ids if cid.startswith(key)]
            if not hits:
                unknown.append(ref.strip())
            elif len(hits) > 1:
                listed = ", ".join(conv_ref(shorts[h]) for h in hits[:10]) + (" …" if len(hits) > 10 else "")
                ambiguous.append(f"{ref.strip()} matches {len(hits)} conversations ({listed})")
            else:
                found.append((hits[0], ledger.conversation_summary(hits[0]), ledger.active_thread(hits[0])))
    if unknown:
        raise NotFoundError(f"no conversation {', '.join(unknown)} in the ledger — `memvault conversations` lists them")
    if ambiguous:
        raise AmbiguousIdError("; ".join(ambiguous) + " — give more of the id")
    out: list[ConversationOut] = []
    for cid, row, thread in found:
        if row is None:  # cannot happen inside one read-only connection; kept honest for the type checker
            raise NotFoundError(f"conversation {conv_ref(cid)} vanished while it was read — try again")
        head = summary_dict(row, shorts[cid])
        out.append({"id": head["id"], "short_id": head["short_id"], "ref": head["ref"], "date": head["date"],
                    "started_at": head["started_at"], "updated_at": head["updated_at"], "source": head["source"],
                    "project": head["project"], "title": head["title"], "ignored": head["ignored"],
                    "message_count": row.messages, "other_branch_messages": row.messages - len(thread),
                    "messages": [message_dict(m) for m in thread]})
    return out


def message_dict(m: MessageRow) -> MessageOut:
    return {"native_id": m.native_id, "seq": m.seq, "role": m.role, "kind": m.kind, "text": m.text,
            "timestamp": _iso(m.timestamp), "low_value": m.low_value}


# -- Markdown ---------------------------------------------------------------------------------
def _when(iso: str | None, previous_day: str | None) -> tuple[str, str | None]:
    """``YYYY-MM-DD HH:MM UTC`` the first time a day shows, then ``HH:MM``; and the day shown."""
    if not iso:
        return "", previous_day
    day, clock = iso[:10], iso[11:16]
    return (f"{clock}" if day == previous_day else f"{day} {clock} UTC"), day


def fold_line(message: MessageOut) -> str:
    """A tool call or result in one line: its first line, clipped, and how much is hidden."""
    lines = [ln for ln in message["text"].splitlines() if ln.strip()] or ["(empty)"]
    head = " ".join(lines[0].split())
    if head.endswith(":") and len(lines) > 1:  # "Bash result:" says little; its first output line says more
        head, lines = f"{head} {' '.join(lines[1].split())}", lines[1:]
    if len(head) > FOLD_CHARS:
        head = head[: FOLD_CHARS - 1] + "…"
    more = f" (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
    what = {"tool_call": "tool call", "tool_result": "tool result"}.get(message["kind"], message["kind"])
    return f"{what}: {head}{more}"


def _fence(text: str) -> str:
    """``text`` in a code fence longer than any backtick run inside it."""
    longest = max((len(r) for r in re.findall(r"`+", text)), default=0)
    bar = "`" * max(3, longest + 1)
    return f"{bar}\n{text}\n{bar}"


def conversation_markdown(conv: ConversationOut, full: bool = False) -> str:
    """A conversation as readable Markdown: title, facts, then each message under its role and
    time; tool calls and results folded to one line each unless ``full``."""
    facts = [f"- id: {conv['ref']} ({conv['id']})", f"- source: {conv['source']}"]
    if conv.get("project"):
        facts.append(f"- project: {conv['project']}")
    if date := conv.get("date"):
        facts.append(f"- date: {date[:10]} {date[11:16]} UTC")
    count = f"- messages: {len(conv['messages'])}"
    if conv.get("other_branch_messages"):
        count += f" (and {conv['other_branch_messages']} on abandoned branches, not shown)"
    facts.append(count)
    if conv.get("ignored"):
        facts.append("- ignored: matches `ignored_topics`, so it is left out of articles and recall")
    out = [f"# {conv['title'] or '(untitled conversation)'}", "", *facts]
    day: str | None = None
    folded_run = False
    for m in conv["messages"]:
        when, day = _when(m.get("timestamp"), day)
        if m["kind"] in FOLDED_KINDS and not full:
            if not folded_run:
                out.append("")
            out.append(f"- {fold_line(m)}" + (f" · {when}" if when else ""))
            folded_run = True
            continue
        folded_run = False
        out += ["", f"## {m['role']}" + (f" · {when}" if when else "")
                + ("" if m["kind"] == "text" else f" ({m['kind'].replace('_', ' ')})"), ""]
        out.append(_fence(m["text"]) if m["kind"] in FOLDED_KINDS else m["text"].rstrip())
    return "\n".join(out) + "\n"
