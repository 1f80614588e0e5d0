"""Stable identifiers: conversation keys and their short citation prefixes.

A conversation key is a full SHA-256 of source kind + native session id (+ agent id
for subagents), never of a path, so a moved file or a re-export maps to the same key.
Citations show the shortest unique prefix of at least 8 hex digits, as git abbreviates.
"""

import hashlib
from collections.abc import Iterable

MIN_PREFIX = 8


def conversation_id(source: str, native_id: str, agent_id: str | None = None) -> str:
    """Full hex key of a conversation."""
    parts = [source, native_id] + ([agent_id] if agent_id else [])
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()


def conv_ref(cid: str) -> str:
    """`conv:<id>`, how a conversation is named: with its full key, its document in the node
    index; with its short prefix, a citation in an article."""
    return f"conv:{cid}"


def node_id(doc: str, path: str) -> str:
    """A node's id in the index: its document key and its stable path (``memvault.stages.index_rows``)."""
    return hashlib.sha256(f"{doc}\x1f{path}".encode()).hexdigest()[:32]


def conversation_node_id(doc: str) -> str:
    """The id of a conversation's own node (its root: the stable path ``/``), from its document key."""
    return node_id(doc, "/")


def content_hash(text: str) -> str:
    """Hash of a piece of text, used to skip unchanged work."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def short_ids(keys: Iterable[str], minimum: int = MIN_PREFIX) -> dict[str, str]:
    """Map each key to its shortest unique prefix of at least ``minimum`` characters."""
    ordered = sorted(set(keys))
    out: dict[str, str] = {}
    for i, key in enumerate(ordered):
        need = minimum
        for other in (ordered[i - 1] if i else None, ordered[i + 1] if i + 1 < len(ordered) else None):
            if other is None:
                continue
            common = 0
            while common < min(len(key), len(other)) and key[common] == other[common]:
                common += 1
            need = max(need, common + 1)
        out[key] = key[: min(need, len(key))]
    return out
