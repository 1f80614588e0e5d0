"""Ledger part: the read queries of browsing (`memvault conversations`, `memvault show`, the
web page), over the durable transcripts. Nothing here writes."""

from datetime import datetime
from typing import Any

from stores.ledger_base import LedgerBase
from stores.ledger_time import naive as _naive
from stores.rows import ConversationSummary

# A conversation's date, as listed and filtered: its start, else its last update, else when
# it was ingested (a note or an export without times still has a place in the list).
_DATE = "coalesce(c.started_at, c.updated_at, c.ingested_at)"


def _summary(r: tuple[Any, ...]) -> ConversationSummary:
    return ConversationSummary(id=r[0], source=r[1], title=r[2], project=r[3], started_at=r[4], updated_at=r[5],
                               ingested_at=r[6], messages=int(r[7]), ignored=bool(r[8]))


class BrowseMixin(LedgerBase):
    """Methods of :class:`stores.ledger.Ledger`."""

    def list_conversations(self, project: str | None = None, source: str | None = None,
                           since: datetime | None = None, until: datetime | None = None,
                           limit: int | None = None) -> list[ConversationSummary]:
        """Conversations, newest first, with their message counts.

        ``project`` matches a stored project exactly or by its last path component (as
        scoped recall does: ``homelab`` finds ``/Users/sam/src/homelab``); ``since`` and
        ``until`` bound the conversation's date, inclusive.
        """
        where: list[str] = []
        params: dict[str, Any] = {}
        if project:
            p = project.rstrip("/") or "/"
            params["project"] = p
            where.append("(c.project = $project OR c.project LIKE '%/' || $project)" if "/" not in p
                         else "rtrim(c.project, '/') = $project")
        if source:
            where.append("c.source = $source")
            params["source"] = source
        if since is not None:
            where.append(f"{_DATE} >= $since")
            params["since"] = _naive(since)
        if until is not None:
            where.append(f"{_DATE} <= $until")
            params["until"] = _naive(until)
        sql = ("SELECT c.id, c.source, c.title, c.project, c.started_at, c.updated_at, c.ingested_at, "
               "(SELECT count(*) FROM messages m WHERE m.conversation_id = c.id), c.ignored "
               "FROM conversations c" + (" WHERE " + " AND ".join(where) if where else "")
               + f" ORDER BY {_DATE} DESC NULLS LAST, c.id")
        if limit is not None:
            sql += " LIMIT $limit"
            params["limit"] = int(limit)
        return [_summary(r) for r in self.con.execute(sql, params).fetchall()]

    def conversation_summary(self, cid: str) -> ConversationSummary | None:
        """One conversation's list line (None when the ledger has no such id)."""
        row = self.con.execute(
            "SELECT c.id, c.source, c.title, c.project, c.started_at, c.updated_at, c.ingested_at, "
            "(SELECT count(*) FROM messages m WHERE m.conversation_id = c.id), c.ignored "
            "FROM conversations c WHERE c.id = ?", [cid]).fetchone()
        return None if row is None else _summary(row)
