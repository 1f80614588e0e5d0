"""changelog: a digest of the run appended to Meta/Changelog.md, and one git commit.

When the run changed nothing (no conversation ingested, no vault file written) it writes
no digest and makes no commit. The commit holds only the files memvault wrote
(`Vault.commit`), never a person's other changes in the vault.
"""

import logging
from datetime import datetime, timezone
from typing import Any


from memvault.failpoints import failpoint
from memvault.stages.context import StageContext
from memvault.stages.result import StageResult

log = logging.getLogger(__name__)

HEADER = "# Changelog\n\nOne entry per memvault run that changed something; newest last.\n"


class ChangelogResult(StageResult):
    """What changelog did: the run's commit (None when the run changed nothing) and whether a digest was written."""

    committed: str | None = None
    digest: bool = False


def digest(run_id: str, ingested: int, touched: dict[str, str], rejected: dict[str, list[str]],
           stage_seconds: dict[str, float], tokens: int) -> str:
    """The run's Meta/Changelog.md entry: what was ingested, written and rejected, and what it cost."""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"## {stamp} — run {run_id}", "", f"- Conversations ingested or updated: {ingested}"]
    for kind in ("created", "updated"):
        names = sorted(s for s, k in touched.items() if k == kind)
        lines.append(f"- Articles {kind}: " + (", ".join(f"[[{s}]]" for s in names) if names else "none"))
    if rejected:
        lines.append("- Articles rejected:")
        lines += [f"  - [[{s}]]: {'; '.join(r)}" for s, r in sorted(rejected.items())]
    per_stage = ", ".join(f"{k} {v:.1f}s" for k, v in stage_seconds.items())
    lines.append(f"- Model tokens: {tokens}; time: {sum(stage_seconds.values()):.1f}s" +
                 (f" ({per_stage})" if per_stage else ""))
    return "\n".join(lines) + "\n"


def commit_message(run_id: str, ingested: int, touched: dict[str, str], rejected: dict[str, list[str]]) -> str:
    """The run's git commit message: counts in the subject, one line per touched article below."""
    created = sum(1 for k in touched.values() if k == "created")
    updated = len(touched) - created
    title = f"memvault run {run_id}: {created} created, {updated} updated, {len(rejected)} rejected, {ingested} conversations"
    body = "\n".join(f"{k}: {s}" for s, k in sorted(touched.items()))
    return title + ("\n\n" + body if body else "")


def run_changelog(ctx: StageContext) -> ChangelogResult:
    """Append the run's digest to Meta/Changelog.md and commit the vault once.

    Reads what the stages recorded on the context (conversations ingested, articles touched
    and rejected, the earlier stages' reports for their time and model tokens) and the
    vault's uncommitted changes; writes the digest and one git commit.
    Unit of work: the run; failpoint `changelog:commit` fires between the digest and the commit.
    """
    vault = ctx.vault
    if not vault.pending_paths() and not ctx.conversations_ingested:
        return ChangelogResult(committed=None, digest=False)
    stage_seconds = {name: float(out["seconds"]) for name, out in ctx.reports.items()}
    tokens = sum(int(out.get("tokens", 0)) for out in ctx.reports.values())
    path = vault.meta_dir / "Changelog.md"
    existing = vault.read(path) or HEADER
    vault.write(path, existing.rstrip("\n") + "\n\n" + digest(ctx.run_id, ctx.conversations_ingested,
                ctx.touched_articles, ctx.rejected, stage_seconds, tokens))
    failpoint("changelog", "commit")
    sha = vault.commit(commit_message(ctx.run_id, ctx.conversations_ingested, ctx.touched_articles, ctx.rejected))
    log.info("committed %s", sha)
    return ChangelogResult(committed=sha, digest=True)
