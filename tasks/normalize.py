"""normalize: canonical wikilinks and footnotes across the vault.

Every spelling of a link (spaces, case, front-matter aliases) becomes the file stem
(`[[Topic_Name]]`, display text kept); dangling links are listed in
Meta/Wanted_Articles.md. Footnotes are renumbered in order of first use, duplicates merged,
orphans dropped — each drop logged on the article's Talk page with the run id. Idempotent.
"""

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from prefect import get_run_logger, task
from prefect.cache_policies import NONE

from memvault.markdown.footnotes import renumber
from memvault.markdown.wikilinks import aliases_of, canonicalize, link_key

WANTED = "Wanted_Articles.md"


def known_names(texts: dict[str, str]) -> dict[str, str]:
    """Every spelling key (stem, title, alias) → canonical stem."""
    known: dict[str, str] = {}
    for stem, text in texts.items():
        known[link_key(stem)] = stem
        for alias in aliases_of(text):
            known.setdefault(link_key(alias), stem)
    return known


def normalize_text(text: str, known: dict[str, str]) -> tuple[str, list[str], list[str]]:
    """(new text, dangling link targets, footnote drop log)."""
    linked, dangling = canonicalize(text, known)
    renumbered, drops = renumber(linked)
    return renumbered, dangling, drops


def talk_note(existing: str | None, title: str, run_id: str, lines: list[str]) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    head = existing.rstrip("\n") + "\n\n" if existing else f"# Talk: {title}\n"
    body = "\n".join(f"- {line}" for line in lines)
    return f"{head}\n## {stamp} — normalize (run {run_id})\n\n{body}\n"


def wanted_page(dangling: dict[str, set[str]]) -> str:
    lines = ["# Wanted articles", "",
             "Links that point at articles that do not exist yet, with the articles that link to them.", ""]
    for target in sorted(dangling, key=str.casefold):
        sources = ", ".join(f"[[{s}]]" for s in sorted(dangling[target]))
        lines.append(f"- **{target}** — linked from {sources}")
    return "\n".join(lines) + "\n"


def run_normalize(ctx: Any, log: Any = None) -> dict[str, Any]:
    vault = ctx.vault
    paths = {p.stem: p for p in vault.list_articles()}
    texts = {stem: p.read_text(encoding="utf-8") for stem, p in paths.items()}
    known = known_names(texts)
    changed = drops_total = 0
    dangling: dict[str, set[str]] = {}
    for stem, text in texts.items():
        new, missing, drops = normalize_text(text, known)
        for target in missing:
            dangling.setdefault(target, set()).add(stem)
        if drops:
            drops_total += len(drops)
            talk = vault.talk_path(stem)
            vault.write(talk, talk_note(vault.read(talk), stem.replace("_", " "), ctx.run_id, drops))
        if new != text and vault.write(paths[stem], new):
            changed += 1
            ctx.touched_articles.setdefault(stem, "updated")
            if log:
                log.info("normalized %s", stem)
    wanted_path: Path = vault.meta_dir / WANTED
    if dangling or wanted_path.exists():
        vault.write(wanted_path, wanted_page(dangling))
    return {"articles": len(texts), "changed": changed, "footnotes_dropped": drops_total, "dangling": len(dangling)}


@task(name="normalize", retries=1, retry_delay_seconds=2, cache_policy=NONE)
def normalize(ctx: Any) -> dict[str, Any]:
    """Prefect task: canonical links and footnotes across the vault."""
    return run_normalize(ctx, get_run_logger())
