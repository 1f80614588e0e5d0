"""`memvault redact --rescan`: apply the current secret patterns to everything already stored.

New patterns (a setting the user extends) only protect what is ingested after they are added;
a rescan brings the past up to date: the ledger (messages, titles, chunks, parser state), the
node index (documents whose text holds a secret are removed; the next run's index stage
rebuilds them from the redacted ledger and vault) and the vault's Markdown files. Overwritten
bytes are purged where memvault controls them: the ledger file is rewritten and the index's
old versions are dropped. Git history older than the rescan is rewritten only on request
(``rewrite_history``: every commit of the vault's branch, a backup ref kept); otherwise the
report says that it still holds the originals and how to purge them.
"""

import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from memvault.ids import conv_ref
from memvault.ops.session import Session, writing
from memvault.hygiene.redact import redact, redact_json
from memvault.config.settings import Settings
from stores.vector_cache import clear_cache

VAULT_FOLDERS = ("articles", "Talk", "Meta")
HISTORY_NOTE = (
    "Git history older than this rescan is rewritten only on request: older commits of the vault "
    "still hold the original text until you run `memvault redact --rescan --rewrite-history` (it "
    "rewrites every commit of the vault's branch and keeps the old one under refs/memvault/backup/), "
    "or rewrite {home} yourself (`git filter-repo --replace-text`, BFG); then "
    "`git reflog expire --expire=now --all && git gc --prune=now`. Clones and backups of the home "
    "keep their own copies."
)
REWRITTEN_NOTE = (
    "The vault's branch '{branch}' was rewritten: {changed} of {commits} commit(s) changed. The old "
    "history is kept under {backup} until you delete it: once the rewrite looks right, "
    "`git -C {home} update-ref -d {backup} && git -C {home} reflog expire --expire=now --all && "
    "git -C {home} gc --prune=now` removes the originals for good. Clones and backups of the home keep "
    "their own copies."
)


class RescanReport(BaseModel):
    """What a rescan changed, per place, and what it could not reach."""

    redactions: dict[str, int] = Field(default_factory=dict, description="Secrets found, per kind")
    ledger: dict[str, int] = Field(default_factory=dict, description="Rows changed per table.column")
    conversations: int = Field(default=0, description="Conversations whose stored text changed")
    index_documents_removed: int = 0
    index_nodes_removed: int = 0
    vectors_cleared: int = Field(default=0, description="Cached vectors dropped (the cache is emptied when text changed)")
    vault_files: list[str] = Field(default_factory=list, description="Vault files rewritten (relative)")
    committed: bool = False
    backups: list[str] = Field(default_factory=list, description="Ledger backups that may hold originals")
    history: dict[str, Any] | None = Field(default=None, description="What --rewrite-history changed (None: not asked)")
    note: str = ""


def _redactor(patterns: dict[str, str] | None, report: RescanReport) -> Callable[[str, str], str]:
    def count(counts: dict[str, int]) -> None:
        for kind, n in counts.items():
            report.redactions[kind] = report.redactions.get(kind, 0) + n

    def apply(place: str, text: str) -> str:
        if place == "sources.state":
            # JSON: redact its strings, never the serialized text (a cut could break quotes).
            value, counts = redact_json(json.loads(text), patterns)
            if not counts:
                return text
            return json.dumps(value)
        new, counts = redact(text, patterns)
        count(counts)
        return new

    return apply


def _rescan_vault(session: Session, patterns: dict[str, str] | None, report: RescanReport) -> None:
    vault = session.vault
    home = session.settings.home
    for folder in VAULT_FOLDERS:
        root = home / folder
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*.md")):
            text = path.read_text(encoding="utf-8")
            new, counts = redact(text, patterns)
            if counts:
                for kind, n in counts.items():
                    report.redactions[kind] = report.redactions.get(kind, 0) + n
                vault.write(path, new)
                report.vault_files.append(str(path.relative_to(home)))
    if report.vault_files:
        report.committed = vault.commit(f"redact: rescan removed secrets from {len(report.vault_files)} file(s)") is not None


def _rescan_index(session: Session, patterns: dict[str, str] | None, report: RescanReport,
                  touched: set[str]) -> list[str]:
    """Remove documents with secrets (and re-queue changed conversations); returns conversation ids."""
    nodes = session.nodes()
    if nodes is None:
        return []
    docs = set(nodes.docs_matching(lambda text: redact(text, patterns)[0] != text))
    # A conversation whose ledger text changed is rebuilt too, even if its nodes looked clean.
    docs |= {conv_ref(cid) for cid in touched if nodes.doc_hashes(conv_ref(cid))}
    report.index_documents_removed = len(docs)
    report.index_nodes_removed = nodes.delete_docs(sorted(docs))
    nodes.purge_old_versions()
    return [d.removeprefix("conv:") for d in docs if d.startswith("conv:")]


def rescan(settings: Settings, rewrite_history: bool = False) -> RescanReport:
    """Redact everything stored under ``settings.home`` with the current patterns.

    Under the writer lock. Order: vault, ledger, index, then (when asked) the vault's git
    history — each step is idempotent, so an interrupted rescan is finished by running it again.
    """
    patterns = settings.ingest.redact_patterns or None
    report = RescanReport()
    with writing(settings, "memvault redact --rescan") as session:
        session.vault.check_writable()
        _rescan_vault(session, patterns, report)
        ledger = session.ledger
        counts, touched = ledger.rewrite_texts(_redactor(patterns, report))
        report.ledger = counts
        report.conversations = len(touched)
        if any(counts.values()):
            ledger.compact()  # freed blocks would otherwise still hold the old text
        requeue = _rescan_index(session, patterns, report, touched)
        if touched or report.index_documents_removed or report.vault_files:
            # The cache holds vectors of the texts as they were: it goes with them.
            report.vectors_cleared = clear_cache(settings.state_dir)
        ledger.clear_indexed(requeue)
        if rewrite_history:
            _rewrite_history(session, patterns, report)
    report.backups = sorted(str(p) for p in Path(settings.state_dir).glob("*.bak"))
    if report.note == "":
        report.note = HISTORY_NOTE.format(home=settings.home)
    return report


def _rewrite_history(session: Session, patterns: dict[str, str] | None, report: RescanReport) -> None:
    """Every commit of the vault's branch again, its files and message redacted (after the
    working tree was, so the tree stays clean)."""
    from stores.vault_history import rewrite_branch

    home = session.settings.home
    branch = session.vault.check_writable()
    result = rewrite_branch(home, branch, lambda text: redact(text, patterns)[0])
    report.history = asdict(result)
    if result.backup_ref:
        report.note = REWRITTEN_NOTE.format(branch=branch, changed=result.commits_changed, commits=result.commits,
                                            backup=result.backup_ref, home=home)
    else:
        report.note = f"The vault's branch '{branch}' holds no secret in any of its {result.commits} commit(s): nothing rewritten."
