"""`memvault forget`: take an article, or a conversation, out of memory on purpose.

Forgetting an article removes its file (and Talk page) in one git commit — recoverable with
`git show HEAD~1:articles/<Stem>.md` — deletes its nodes from the index, and marks its
bucket forgotten in the ledger so its chunks are never synthesized into an article of that
name again.

Forgetting a conversation deletes it and everything derived from it from the ledger (a
tombstone keeps a later ingest from storing it again), deletes its nodes from the index, and
removes its words and citations from every article (and its pages in `Conversations/`): the sentences, list items and sections
whose only support was that conversation go (`memvault.markdown.prune`; text also citing
another conversation, and text with no citation, stays), footnote definitions citing it go,
their markers go, footnotes are renumbered, and each article is re-gated (the removed
citation and prose being the intended loss) before the vault is committed once. An article
left with no prose is removed. Each Talk page records how much was removed, never the words;
the old text stays in git history. The nodes of articles that lost prose are deleted from
the index too (the next run indexes them again from the vault).

Order, so that running the command again finishes an interrupted one: ledger, index, vault.
The `forget_*` functions take the writer lock themselves; `plan_*` only read.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

from memvault.ids import MIN_PREFIX, conv_ref, short_ids
from memvault.markdown.conversation_page import FOLDER
from memvault.markdown.gate import new_problems
from memvault.markdown.names import article_title
from memvault.markdown.talk import talk_note
from memvault.errors import AmbiguousIdError, MemvaultError, NotFoundError
from memvault.markdown.footnotes import CONV_RE, REFERENCES, renumber
from memvault.markdown.prune import prune
from memvault.markdown.scan import Doc
from memvault.ops.conversations import conversation_key
from memvault.ops.session import Session, writing
from memvault.config.settings import Settings
from stores.ledger import Ledger
from stores.meta import BucketsPage
from stores.vault import Vault
from stores.vector_cache import clear_cache



# -- articles --------------------------------------------------------------------------------
@dataclass
class ArticlePlan:
    stem: str
    title: str
    path: str  # relative to the home
    talk: str | None


@dataclass
class ArticleForgotten:
    stem: str
    title: str
    bucket: str
    removed: list[str]
    nodes_deleted: int
    commit: str | None
    recover: str


def plan_article(settings: Settings, name: str) -> ArticlePlan:
    """Which files `forget NAME` would remove (title or file stem, any case)."""
    vault = Vault(settings.home)
    path = vault.find_article(name)
    if path is None:
        raise NotFoundError(f"no article named {name!r} — `memvault articles` lists them (title or file stem)")
    talk = vault.talk_path(path.stem)
    return ArticlePlan(stem=path.stem, title=article_title(path.stem, path.read_text(encoding="utf-8"), trust_h1=True),
                       path=str(path.relative_to(settings.home)),
                       talk=str(talk.relative_to(settings.home)) if talk.is_file() else None)


def forget_article(settings: Settings, name: str) -> ArticleForgotten:
    """Remove an article under the writer lock: ledger (bucket forgotten), index, then files
    and one commit."""
    with writing(settings, f"memvault forget {name}") as session:
        return _forget_article(session, name)


def _forget_article(session: Session, name: str) -> ArticleForgotten:
    settings, vault, ledger = session.settings, session.vault, session.ledger
    plan = plan_article(settings, name)
    vault.check_writable()
    # A hand-written article has no bucket: one is recorded, forgotten, so the name stays taken.
    bucket = ledger.bucket_for_stem(plan.stem) or plan.title
    ledger.forget_bucket(bucket)
    nodes_deleted = delete_index_docs(session, [plan.stem])
    BucketsPage(vault).remove(bucket)
    removed = [plan.path] + ([plan.talk] if plan.talk else [])
    for rel in removed:
        vault.remove(settings.home / rel)
    recover = f"git -C {settings.home} checkout HEAD~1 -- {' '.join(removed)}"
    commit = vault.commit(f"memvault forget: {plan.title}\n\nRemoved {', '.join(removed)}; bucket '{bucket}' "
                          f"is forgotten and will not be synthesized again.\nRecover the text with: {recover}")
    return ArticleForgotten(stem=plan.stem, title=plan.title, bucket=bucket, removed=removed,
                            nodes_deleted=nodes_deleted, commit=commit, recover=recover)


def delete_index_docs(session: Session, docs: list[str], purge: bool = False) -> int:
    """Delete every node of ``docs`` from the index (none yet: nothing to do); returns nodes deleted.

    ``purge`` also drops older index versions, so the deleted text is gone from disk.
    """
    # What the stages embedded of these documents is in the vector cache too.
    clear_cache(session.settings.state_dir)
    nodes = session.nodes()
    if nodes is None:
        return 0
    deleted = nodes.delete_docs(docs)
    if deleted and purge:
        nodes.purge_old_versions()
    return deleted


# -- conversations -----------------------------------------------------------------------------
@dataclass
class ConversationPlan:
    id: str
    title: str | None
    source: str | None
    short: str = ""  # the shortest unique prefix, as citations and `conversations` show it
    articles: dict[str, int] = field(default_factory=dict)  # stem → footnote definitions citing it


@dataclass
class ConversationForgotten:
    id: str
    ledger_rows: dict[str, int]
    nodes_deleted: int
    articles: dict[str, int]
    commit: str | None
    sentences_removed: int = 0  # prose whose only support was the conversation
    sections_removed: int = 0
    articles_removed: list[str] = field(default_factory=list)  # left with no prose at all


def resolve_conversation(ledger: Ledger, ref: str, include_forgotten: bool = True) -> str:
    """The full id a reference names; ambiguous prefixes are refused with the candidates."""
    key = conversation_key(ref)
    hits = ledger.conversation_ids_with_prefix(key, include_forgotten=include_forgotten)
    if not hits:
        raise NotFoundError(f"no conversation conv:{key} in the ledger — check the id in the article's References")
    if len(hits) > 1:
        shorts = short_ids(hits)
        lines = []
        for cid in hits[:20]:
            info = ledger.conversation(cid)
            source, title = (info.source, info.title) if info else ("forgotten", None)
            lines.append(f"  conv:{shorts[cid]}  {source}  {title or ''}".rstrip())
        more = f"\n  … and {len(hits) - 20} more" if len(hits) > 20 else ""
        # The same answer (and exit code 1) as `memvault show` and `get` give an ambiguous prefix.
        raise AmbiguousIdError(f"conv:{key} matches {len(hits)} conversations; give more of the id:\n"
                         + "\n".join(lines) + more)
    return str(hits[0])


def _cites(cited: str, cid: str) -> bool:
    """A citation names a conversation by a prefix of its full id (at least 8 hex)."""
    return cid.startswith(cited.lower())


_ENTRY = r"`?conv:{id}`?(?:\s*\([^)\n]*\))?(?:\s*—[^;\n]*)?\s*;?\s*"


def strip_citations(text: str, cid: str) -> tuple[str, int, list[str]]:
    """``text`` without its citations of ``cid``: (new text, definitions touched, renumber log).

    A definition citing only this conversation is removed with its markers; one that also
    cites others loses just this entry.
    """
    doc = Doc(text)
    lines = list(doc.lines)
    drop: set[int] = set()
    touched = 0
    for d in doc.footnote_defs():
        ids = CONV_RE.findall(d.content)
        mine = [c for c in ids if _cites(c, cid)]
        if not mine:
            continue
        touched += 1
        if len(mine) == len(ids):
            drop.update(range(d.start, d.end))
            continue
        for c in set(mine):
            pattern = re.compile(_ENTRY.format(id=re.escape(c)))
            for i in range(d.start, d.end):
                lines[i] = pattern.sub("", lines[i]).rstrip().rstrip(";").rstrip()
    if not touched:
        return text, 0, []
    body = "\n".join(line for i, line in enumerate(lines) if i not in drop)
    new, log = renumber(doc.front + body)
    return new, touched, log


def forget_text(text: str, cid: str) -> tuple[str, int, list[str], int, int]:
    """``text`` without the prose only ``cid`` supports and without its citations:
    (new text, definitions touched, renumber log, sentences removed, sections removed)."""
    pruned = prune(text, lambda cited: _cites(cited, cid))
    new, n, log = strip_citations(pruned.text, cid)
    return new, n, log, pruned.sentences, pruned.sections


def has_prose(text: str) -> bool:
    """Whether an article has any text block before its See also and References (beyond headings)."""
    doc = Doc(text)
    ends = {REFERENCES.casefold(), "see also"}
    refs = next((h.start for h in doc.headings() if h.level == 2 and h.text.casefold() in ends), len(doc.lines))
    return any(b.kind not in ("heading", "footnote_def", "hr", "html_block") for b in doc.blocks() if b.start < refs)


def _require_ledger(settings: Settings) -> None:
    if not settings.ledger_path.exists():
        raise NotFoundError(f"no ledger at {settings.ledger_path} — nothing has been ingested yet")


def plan_conversation(settings: Settings, ref: str) -> ConversationPlan:
    """What `forget --conversation REF` would remove; reads the ledger read-only (while a
    run writes it, :class:`~memvault.errors.LedgerBusy` names the run)."""
    _require_ledger(settings)
    with Ledger.open(settings, read_only=True) as ledger:
        # The read-only ledger may predate the tombstone table; forgotten ids are matched later.
        cid = resolve_conversation(ledger, ref, include_forgotten=False)
        info = ledger.conversation(cid)
        # Ids that share the first MIN_PREFIX digits are the only ones a longer prefix must tell apart.
        short = short_ids(ledger.conversation_ids_with_prefix(cid[:MIN_PREFIX]))[cid]
    plan = ConversationPlan(id=cid, title=info.title if info else None, source=info.source if info else None,
                            short=short)
    for stem, (_, text) in Vault(settings.home).read_articles().items():
        _, n, _ = strip_citations(text, cid)
        if n:
            plan.articles[stem] = n
    return plan


def forget_conversation(settings: Settings, ref: str) -> ConversationForgotten:
    """Remove a conversation from the ledger, the index and every article under the writer
    lock; one commit."""
    _require_ledger(settings)
    with writing(settings, f"memvault forget --conversation {ref}") as session:
        return _forget_conversation(session, ref)


def _forget_conversation(session: Session, ref: str) -> ConversationForgotten:
    vault, ledger = session.vault, session.ledger
    vault.check_writable()
    cid = resolve_conversation(ledger, ref)
    # Every article is rewritten and gated before anything changes: a refusal changes nothing.
    rewrites: dict[str, tuple[Path, str, str, int, list[str], int, int]] = {}
    refused: dict[str, list[str]] = {}
    for stem, (path, text) in vault.read_articles().items():
        new, n, log, sentences, sections = forget_text(text, cid)
        if not n:
            continue
        # Shrinking is the point here; every other rule of the gate holds.
        problems = [p for p in new_problems(new, text, allowed_removed=[cid]) if not p.startswith("shrank:")]
        if problems and has_prose(new):
            refused[stem] = problems
        rewrites[stem] = (path, text, new, n, log, sentences, sections)
    if refused:
        detail = "; ".join(f"{s}: {', '.join(r)}" for s, r in sorted(refused.items()))
        raise MemvaultError(f"removing conv:{cid[:12]} would break article(s): {detail} — "
                            "fix them by hand (or `memvault lint --fix`) and run forget again; nothing was changed")
    rows = ledger.forget_conversation(cid)
    pruned = [stem for stem, r in rewrites.items() if r[5]]
    # The conversation's nodes, and those of articles whose prose held its words.
    nodes_deleted = delete_index_docs(session, [conv_ref(cid), *pruned], purge=True)
    run_id = f"forget-conv-{cid[:12]}"
    emptied: list[str] = []
    for stem, (path, text, new, n, log, sentences, sections) in rewrites.items():
        if has_prose(new):
            vault.write(path, new)
        else:
            vault.remove(path)
            emptied.append(stem)
        talk = vault.talk_path(stem)
        note = [f"removed {n} citation(s) of a forgotten conversation (conv:{cid[:12]})", *log]
        if sentences:
            note.append(f"removed {sentences} sentence(s)" + (f" and {sections} emptied section(s)" if sections else "")
                        + " whose only support was that conversation (not quoted here; the previous text is in git "
                          "history)" + ("; no prose was left, so the article was removed" if stem in emptied else ""))
        vault.write(talk, talk_note(vault.read(talk), article_title(stem, text), run_id, note, what="forget"))
    # Its conversation pages (one per short id it was cited under) hold its words: they go too.
    for page in sorted((vault.home / FOLDER).glob("conv-*.md")):
        prefix = page.stem[len("conv-"):]
        if len(prefix) >= MIN_PREFIX and cid.startswith(prefix):
            vault.remove(page)
    total = sum(r[5] for r in rewrites.values())
    commit = vault.commit(f"memvault forget conv:{cid[:12]}: citations removed from {len(rewrites)} article(s), "
                          f"{total} sentence(s) it alone supported removed"
                          + ("\n\n" + "\n".join(f"{'removed' if s in emptied else 'updated'}: {s}"
                                                  for s in sorted(rewrites)) if rewrites else ""))
    return ConversationForgotten(id=cid, ledger_rows=rows, nodes_deleted=nodes_deleted,
                                 articles={s: r[3] for s, r in rewrites.items()}, commit=commit,
                                 sentences_removed=total, sections_removed=sum(r[6] for r in rewrites.values()),
                                 articles_removed=sorted(emptied))
