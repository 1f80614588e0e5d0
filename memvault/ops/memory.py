"""The agent API behind every door (CLI, MCP, HTTP, Prefect): search, timeline, get, recall,
and the article tools. Reads only the node index and the vault; never opens the ledger.
"""

import functools
import re
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from memvault.embeddings import MODEL_DIMS, Embedder
from memvault.embeddings.base import say
from memvault.embeddings.select import embedder_for
from memvault.errors import EmbedderMismatchError, NotFoundError, UsageError
from memvault.ids import conversation_node_id
from memvault.markdown.tree import article_nodes
from memvault.markdown.wikilinks import find_links, link_key
from memvault.ops.results import (Article, ArticleLinks, ArticleSummary, Node, Recall, RecallHit, SearchHit, Section,
                                   TimelineNode, TocEntry)
from memvault.recall.access import ACCESS_LOG, append_access
from memvault.recall.block import render_block
from memvault.recall.evidence import TURNS, said
from memvault.recall.query import hop_terms
from memvault.recall.scope import Scope, in_project
from memvault.recall.scoring import Candidate, Scored, ScoringWeights, score_head, select
from memvault.config.settings import Settings
from stores.vault import Vault

# The date a section heading ends with (memvault/naming/headings.py: "About (2026-09-14)").
_DATE_SUFFIX = re.compile(r"\s*\(\d{4}-\d{2}-\d{2}\)\s*$")

if TYPE_CHECKING:  # imported when first used: the article tools never load lancedb (~1.7 s CPU)
    from stores.nodes import NodeIndex


def _checked(query: str) -> str:
    """The query, or ``UsageError``: an empty query would return arbitrary nodes."""
    if not isinstance(query, str) or not query.strip():
        raise UsageError("the query is empty — say what to look for, e.g. \"postgres backups\"")
    return query


def _measure(c: Candidate, qv: np.ndarray | None, cos: float | None = None) -> None:
    """``c``'s cosine to the query (``cos`` when a vector search gave it) and its turn's best
    sentence's, from the vectors the row was read with."""
    if qv is None or (cos is None and c.vector is None):
        return
    c.cos = cos if cos is not None else float(c.vector @ qv)
    if c.sentences is not None and len(c.sentences):
        c.sentence_cos = float(np.max(c.sentences @ qv))


def _candidate(row: dict[str, Any], cwd: str | None = None) -> Candidate:
    vec = row.get("vector")
    ts = row.get("created_at")
    return Candidate(
        id=row["id"], parent=row.get("parent"), importance=float(row.get("importance") or 0.0),
        access=int(row.get("access") or 0), reply=row.get("reply"),
        similar=[(e["id"], float(e["sim"])) for e in row.get("similar") or []],
        vector=np.asarray(vec, dtype=np.float32) if vec is not None and not row.get("pending") else None,
        sentences=row.get("sentences") if vec is not None and not row.get("pending") else None,
        chars=len(row.get("text") or ""), text=row.get("text") or "",
        timestamp=ts if isinstance(ts, datetime) else None, in_project=in_project(row.get("project"), cwd),
        doc=row.get("doc"),
    )


class MemoryService:
    """One instance per process (the embedding model loads on the first query)."""

    def __init__(self, settings: Settings, embedder: Embedder | None = None) -> None:
        self.settings = settings
        # One onnxruntime thread: a query is one short text, which a second thread does not
        # speed up, and the pool's threads keep spinning after each run, on the cores the
        # index searches that follow need (2–4× slower searches on two cores, measured).
        self.embedder = embedder or embedder_for(settings, threads=1)
        self.vault = Vault(settings.home)
        self._nodes: NodeIndex | None = None
        self.vectors = True  # False: the index's embedder is not at hand, full-text recall only
        self.notice: str | None = None  # why recall answers from an index of another embedder

    @property
    def nodes(self) -> "NodeIndex":
        if self._nodes is None:
            from stores.nodes import NodeIndex

            try:
                self._nodes = NodeIndex.open_existing(self.settings)
            except EmbedderMismatchError as exc:
                self._nodes = self._stored_index(exc)
        return self._nodes

    def _stored_index(self, exc: EmbedderMismatchError) -> "NodeIndex":
        """The live index built by another embedder than the configured one (waiting for
        `memvault reindex`): queried with its own embedder when that one is bundled, else by
        full text alone — never with vectors of another model. Says so once on stderr."""
        from stores.nodes import NodeIndex

        nodes = NodeIndex.open_stored(self.settings)
        if nodes.model_name in MODEL_DIMS:
            e = self.settings.embeddings.model_copy(update={"model": nodes.model_name, "url": None})
            self.embedder = embedder_for(self.settings.model_copy(update={"embeddings": e}), threads=1)
            how = f"with its own embedder `{nodes.model_name}`"
        else:
            self.vectors = False
            how = "by full text only"
        self.notice = (f"the node index was built by `{exc.stored}`, not the configured `{exc.configured}`; "
                       f"recall answers from it {how} until `memvault reindex` finishes")
        say(self.notice)
        return nodes

    def prewarm(self) -> list[str]:
        """Load the node index's search indexes into memory (``NodeIndex.prewarm``) — for a
        process that answers many recalls; a one-shot recall would only pay for it. Returns
        the indexes loaded (none when there is no index yet)."""
        from stores.nodes import NodeIndex

        return self.nodes.prewarm() if NodeIndex.exists(self.settings) else []

    def weights(self, cwd: str | None = None) -> ScoringWeights:
        # Every `[recall]` setting that names a scoring weight (the rest keep seed 000's values);
        # the project prior only when the recall is made from somewhere (a hook's or CLI's cwd).
        w = ScoringWeights(**self.settings.recall.model_dump(include=set(ScoringWeights.model_fields)))
        return w.model_copy(update={"w_project": self.settings.live.project_boost}) if cwd else w

    # -- search ---------------------------------------------------------------------------
    def _scored(self, query: str, k: int, keep: int | None = None, scope: Scope = Scope(),
                cwd: str | None = None) -> tuple[list[Scored], dict[str, dict[str, Any]]]:
        """Every scored node (``keep``: the best ``keep`` exactly, see ``score_head``) and the rows read."""
        cands, rows, lookup = self._candidates(query, k, scope, cwd)
        scored, _ = score_head(cands, lookup, self.weights(cwd), datetime.now(timezone.utc), keep, query=query)
        return scored, rows

    def _candidates(self, query: str, k: int, scope: Scope = Scope(), cwd: str | None = None,
                    query_vector: np.ndarray | None = None, full_text_only: bool = False
                    ) -> tuple[list[Candidate], dict[str, dict[str, Any]], Callable[[list[str]], dict[str, Candidate]]]:
        """Vector top-k ∪ full-text top-k, the rows read (grown by ``lookup``), and the lookup
        for the nodes that scoring lifts (``full_text_only``: no vector search, as when the
        index's embedder is not at hand).

        Each hit arrives with the ids of everything it can lift — its parent, its `similar`
        neighbours, the turn that replies to it, the messages of an exchange hit and the other
        messages of a message hit's exchange — so a recall reads twice: the two searches side
        by side, then (``lookup``) the lifted nodes that can still rank, with their vectors.
        """
        rows: dict[str, dict[str, Any]] = {}
        cands: dict[str, Candidate] = {}
        ix = self.settings.index
        from stores.nodes import scope_filter

        where = scope_filter(scope.project, scope.source, scope.since, scope.until) if scope else None
        # A warm embedder's work is done inside the call, once the full-text search has
        # started: onnxruntime and LanceDB both release the GIL, so the two overlap on two
        # cores. A one-shot process's embedder (a CLI recall, a hook) lets its model go after
        # the query, so it embeds first: the index search then runs without the model's memory.
        nodes = self.nodes  # opened first: an index of another embedder may switch the embedder
        vectors = self.vectors and not full_text_only
        embed = functools.cache(lambda: query_vector if query_vector is not None else self.embedder.embed_one(query))
        if vectors and not getattr(self.embedder, "keep_session", True):
            embed()
        vector_hits, fts_hits = nodes.recall_search(embed if vectors else None, query, k, nprobes=ix.ann_nprobes,
                                                    refine_factor=ix.ann_refine_factor, where=where)
        qv = embed() if vectors else None
        for rank, row in enumerate(vector_hits, start=1):
            rows[row["id"]] = row
            c = cands.setdefault(row["id"], _candidate(row, cwd))
            c.vector_rank = rank
            _measure(c, qv, 1.0 - float(row["_distance"]))
        for rank, row in enumerate(fts_hits, start=1):
            rows.setdefault(row["id"], row)
            c = cands.setdefault(row["id"], _candidate(row, cwd))
            c.lexical, c.fts_rank = float(row["_score"]), rank
            if c.cos is None:
                _measure(c, qv)
        if self.settings.recall.hop_k:
            self._second_hop(query, cands, rows, qv, where)
        # An exchange hit lifts its messages and a message hit the other messages of its
        # exchange and the turn that replies to it, so the answer is found through the turn
        # that holds the question (each turn still ranks on its own; nothing stands for the
        # turns inside it).
        for cid, c in cands.items():
            if rows[cid]["kind"] == "exchange":
                c.children = list(rows[cid].get("kin") or [])
            elif rows[cid]["kind"] == "message":
                c.siblings = list(rows[cid].get("kin") or [])

        def lookup(ids: list[str]) -> dict[str, Candidate]:
            unread = [i for i in ids if i not in rows]
            for r in self.nodes.rows_of(unread, where):
                rows[r["id"]] = r
            return {i: _candidate(rows[i], cwd) for i in ids if i in rows}

        return list(cands.values()), rows, lookup

    def _second_hop(self, query: str, cands: dict[str, Candidate], rows: dict[str, dict[str, Any]],
                    qv: np.ndarray | None, where: str | None) -> None:
        """Full-text search for the rare terms of the first hop's best hits (``hop_terms``), so
        a turn that shares a name or a place with them — the other half of an answer that spans
        turns — is a candidate even when it shares no word with the query. The seeds are the
        best of the two lists fused by rank (scoring has not run yet)."""
        r = self.settings.recall
        fused = {cid: sum(1 / (r.rrf_k + rank) for rank in (c.vector_rank, c.fts_rank) if rank is not None)
                 for cid, c in cands.items()}
        seeds = sorted(fused, key=lambda cid: (-fused[cid], cid))[: r.hop_seeds]
        terms = hop_terms([cands[s].text for s in seeds], [c.text for c in cands.values()], query,
                          r.hop_terms, r.hop_max_share)
        if not terms:
            return
        for rank, row in enumerate(self.nodes.text_search(" ".join(terms), r.hop_k, where), start=1):
            rows.setdefault(row["id"], row)
            c = cands.setdefault(row["id"], _candidate(row))
            c.hop_rank = rank
            if c.cos is None:
                _measure(c, qv)

    def scored_candidates(self, query: str, cwd: str | None = None, query_embedder: Embedder | None = None,
                          full_text_only: bool = False
                          ) -> tuple[list[Scored], dict[str, dict[str, Any]], list[Candidate], np.ndarray | None]:
        """Every scored node, the rows read, the raw candidates (with their list ranks) and the
        query vector (None: the index is answered by full text only): what prompt-recall weighs
        before it shapes a block of its own (over ``live.prompt_top_k`` candidates a list: the
        gate was chosen on that depth). ``query_embedder``: another instance of the service's
        embedder for the query (the hook's, which gives up sooner)."""
        query = _checked(query)
        _ = self.nodes  # opened first: an index of another embedder may switch the embedder
        vectors = self.vectors and not full_text_only
        embedder = query_embedder if query_embedder is not None and query_embedder.name == self.embedder.name else self.embedder
        qv = embedder.embed_one(query) if vectors else None
        cands, rows, lookup = self._candidates(query, self.settings.live.prompt_top_k, Scope(), cwd, qv,
                                               full_text_only=not vectors)
        scored, _ = score_head(cands, lookup, self.weights(cwd), datetime.now(timezone.utc), None, query=query)
        return scored, rows, cands, qv

    def search(self, query: str, limit: int = 10, scope: Scope = Scope(), cwd: str | None = None) -> list[SearchHit]:
        """Ids, titles, paths and scores of the best nodes — no bodies. ``scope`` filters,
        ``cwd`` (where the search is made from) boosts that project's nodes."""
        scored, rows = self._scored(_checked(query), max(self.settings.recall.top_k, limit), keep=limit,
                                    scope=scope, cwd=cwd)
        out: list[SearchHit] = []
        for s in scored[:limit]:
            r = rows[s.id]
            out.append({"id": s.id, "title": r["title"], "path": r["path"], "kind": r["kind"],
                        "doc": r["doc"], "score": round(s.score, 6), "date": said(r) or None, "project": r.get("project"),
                        "source": r.get("source")})
        return out

    def recall(self, query: str, max_nodes: int | None = None, max_chars: int | None = None,
               max_node_chars: int | None = None, scope: Scope = Scope(), cwd: str | None = None) -> Recall:
        """A ``<memory-recall>`` block within the budgets, with every hit's explanation.

        ``scope`` keeps only nodes of that project, source and dates (inside the searches);
        ``cwd``, the directory the recall is made from, adds the project prior to its nodes.
        """
        r = self.settings.recall
        cands, rows, lookup = self._candidates(_checked(query), r.top_k, scope, cwd)
        picked = self._select(cands, lookup, max_nodes or r.max_nodes, max_chars or r.max_chars,
                              max_node_chars or r.max_node_chars, cwd, query)
        hits: list[RecallHit] = []
        titles = self._context_titles([rows[s.id] for s in picked], rows)
        for s in picked:
            row = rows[s.id]
            cite = row["doc"] if row["doc"].startswith("conv:") else f"[[{row['doc']}]]"
            if row["doc"].startswith("conv:"):
                cite = row["path"].split("/")[1]
            hits.append({"id": s.id, "path": row["path"], "title": titles.get(s.id, row["title"]),
                         "kind": row["kind"], "score": round(s.score, 6), "text": s.text, "cite": cite,
                         "date": said(row) or None,
                         "project": row.get("project"), "source": row.get("source"),
                         "explain": {k: (round(v, 6) if isinstance(v, float) else v) for k, v in s.explain.items()}})
        self._log_access([h["id"] for h in hits])
        return {"query": query, "block": render_block(query, hits), "hits": hits}

    def _context_titles(self, hits: list[dict[str, Any]], rows: dict[str, dict[str, Any]]) -> dict[str, str]:
        """Hit id → the title it stands under, for the hits whose own title is their text cut
        short: a turn its conversation's, a paragraph its section's. From the rows recall read,
        the others in one read of the index."""
        above = {r["id"]: conversation_node_id(r["doc"]) if r["kind"] in TURNS else str(r["parent"])
                 for r in hits if r["kind"] in TURNS or (r["kind"] == "paragraph" and r.get("parent"))}
        missing = sorted(set(above.values()) - rows.keys())
        found = {r["id"]: r for r in (self.nodes.get(missing) if missing else [])}
        return {hit: str(node.get("title") or "") for hit, up in above.items()
                if (node := rows.get(up) or found.get(up)) is not None}

    def _select(self, cands: list[Candidate], lookup: Callable[[list[str]], dict[str, Candidate]],
                max_nodes: int, max_chars: int, max_node_chars: int, cwd: str | None = None,
                query: str | None = None) -> list[Scored]:
        """``select`` over the best-scored nodes, scoring (and reading) only as deep as it goes.

        ``select`` is greedy and stops once ``max_nodes`` or ``max_chars`` is reached, so on a
        prefix that it does not exhaust it picks exactly what it would pick on the whole list;
        the prefix is scored exactly by ``score_head`` (lifted nodes that cannot reach it are
        never read), and doubles when ``select`` exhausts it.
        """
        weights, now = self.weights(cwd), datetime.now(timezone.utc)
        n = max_nodes * 3
        while True:
            scored, complete = score_head(cands, lookup, weights, now, keep=n, query=query)
            picked = select(scored[:n], max_nodes=max_nodes, max_chars=max_chars, max_node_chars=max_node_chars,
                            diversity=self.settings.recall.diversity)
            if (complete and n >= len(scored)) or len(picked) >= max_nodes or sum(p.chars for p in picked) >= max_chars:
                return picked
            n *= 2

    def _log_access(self, ids: list[str]) -> None:
        """Append-only side log, folded into the index by the next run (never a write per query)."""
        if not ids:
            return
        append_access(self.settings.state_dir / ACCESS_LOG, ids)

    # -- layers 2 and 3 ---------------------------------------------------------------------
    def get(self, ids: list[str]) -> list[Node]:
        """Full nodes by id; ``NotFoundError`` names every id that is not in the index."""
        rows = self.nodes.get(ids)
        missing = [i for i in dict.fromkeys(ids) if i not in {r["id"] for r in rows}]
        if missing:
            raise NotFoundError(f"no node {', '.join(missing)} in the index — use ids from `memvault search` "
                                "(an id from before a `memvault reindex` or a forget may be gone)")
        return [cast(Node, {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in r.items() if k != "_distance"})
                for r in rows]

    def timeline(self, node_id: str, before: int = 3, after: int = 3) -> list[TimelineNode]:
        anchor = self.nodes.get([node_id])
        if not anchor:
            raise NotFoundError(f"no node {node_id} — use an id from `memvault search`")
        doc = self.nodes.doc_nodes(anchor[0]["doc"])
        pos = next(i for i, r in enumerate(doc) if r["id"] == node_id)
        part = doc[max(0, pos - before): pos + after + 1]
        return [{"id": r["id"], "path": r["path"], "kind": r["kind"], "title": r["title"], "text": r["text"],
                 "date": said(r) or None, "anchor": r["id"] == node_id} for r in part]

    # -- article tools ------------------------------------------------------------------------
    def list_articles(self) -> list[ArticleSummary]:
        from memvault.markdown.footnotes import citations
        from memvault.markdown.gate import word_count

        out: list[ArticleSummary] = []
        for path in self.vault.list_articles():
            text = path.read_text(encoding="utf-8")
            out.append({"title": Vault.title_of(path), "path": str(path.relative_to(self.settings.home)),
                        "words": word_count(text), "citations": len(set(citations(text))),
                        "updated_at": datetime.fromtimestamp(path.stat().st_mtime).isoformat(timespec="seconds")})
        return out

    def _article(self, name: str) -> Path:
        path = self.vault.find_article(name)
        if path is None:
            raise NotFoundError(f"no article named {name!r} — `memvault articles` lists them")
        return path

    def read_article(self, name: str) -> Article:
        path = self._article(name)
        return {"title": Vault.title_of(path), "path": str(path.relative_to(self.settings.home)),
                "text": path.read_text(encoding="utf-8")}

    def article_toc(self, name: str) -> list[TocEntry]:
        path = self._article(name)
        return [{"path": n.path, "title": n.title, "line": n.line}
                for n in article_nodes(path.stem, path.read_text(encoding="utf-8")) if n.kind == "section"]

    def read_section(self, name: str, section: str) -> Section:
        path = self._article(name)
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        nodes = article_nodes(path.stem, text)
        sections = [n for n in nodes if n.kind == "section"]
        want = section.strip().casefold()
        exact = [i for i, n in enumerate(sections) if n.title.casefold() == want
                 or n.path.casefold().endswith("/" + want.replace(" ", "_")) or n.path.casefold() == want]
        # A section's heading carries the date of its first source ("Day count (2026-09-14)"):
        # the title without that suffix names it too, when it names only one.
        bare = [i for i, n in enumerate(sections) if _DATE_SUFFIX.sub("", n.title).casefold() == want]
        found = exact or bare
        if len(found) > 1:
            raise NotFoundError(f"{section!r} names {len(found)} sections of {path.stem}: "
                                + ", ".join(repr(sections[i].title) for i in found) + " — give the whole title")
        if not found:
            raise NotFoundError(f"no section {section!r} in {path.stem} — `memvault toc {path.stem}` lists them")
        i = found[0]
        n = sections[i]
        start = (n.line or 1) - 1
        depth = n.path.count("/")
        end = next(((m.line or 1) - 1 for m in sections[i + 1:] if m.path.count("/") <= depth), len(lines))
        return {"article": Vault.title_of(path), "section": n.title, "path": n.path,
                "text": "\n".join(lines[start:end]).strip() + "\n"}

    def article_links(self, name: str) -> ArticleLinks:
        path = self._article(name)
        out = sorted({t for t, _, _ in find_links(path.read_text(encoding="utf-8"))})
        key = link_key(path.stem)
        inbound = sorted(p.stem for p in self.vault.list_articles() if p != path
                         and any(link_key(t) == key for t, _, _ in find_links(p.read_text(encoding="utf-8"))))
        return {"article": Vault.title_of(path), "out": out, "in": inbound}
