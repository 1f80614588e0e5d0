"""`memvault lint [--fix]`: check every article of a memory home, and mend what can be mended.

Findings come from `memvault.markdown.lint` (per article and across the vault) plus the
vault's conventions: articles are `articles/<Stem>.md` files, UTF-8, with no folders or
other files beside them. `--fix` removes needless escapes and refreshes no-model leads, then runs normalize, wikify
(which adds See also links to related articles) and normalize again over the whole
vault (the same code as the nightly stages) and commits the result once; what is left
afterwards — dangling links, names that need a person's choice — is reported.
"""

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from memvault.markdown.conversation_page import FOLDER
from memvault.markdown.lint import DEFAULT_MAX_WORDS, Finding, lint_vault
from memvault.markdown.lint_wiki import fix_escapes_and_lead
from memvault.ops.session import writing
from memvault.config.settings import Settings
from stores.vault import Vault
from memvault.stages.normalize import normalize_vault
from memvault.stages.wikify import clean_articles

_IGNORED = {".gitkeep", ".DS_Store"}


def scan_articles(home: Path) -> tuple[dict[str, str], list[Finding]]:
    """Article texts (path relative to the home → text) and findings about files that break
    the conventions (folders, non-Markdown files, undecodable text) in articles/."""
    texts: dict[str, str] = {}
    findings: list[Finding] = []
    root = home / "articles"
    if not root.is_dir():
        return texts, [Finding(file="articles/", line=1, rule="missing-folder",
                               message="the vault has no articles/ folder — run `memvault init`", fixable=False)]
    for entry in sorted(root.iterdir()):
        rel = f"articles/{entry.name}"
        if entry.name in _IGNORED:
            continue
        if entry.is_dir():
            findings.append(Finding(file=rel + "/", line=1, rule="nested-folder", fixable=False,
                                    message="articles/ holds no folders: move its articles up into articles/ "
                                            "(memvault neither reads nor indexes them here)"))
        elif entry.suffix != ".md" or entry.name.startswith("."):
            findings.append(Finding(file=rel, line=1, rule="stray-file", fixable=False,
                                    message="not an article (only <Title>.md files belong in articles/); "
                                            "move it elsewhere in the vault or delete it"))
        else:
            try:
                texts[rel] = entry.read_text(encoding="utf-8")
            except UnicodeDecodeError as exc:
                findings.append(Finding(file=rel, line=1, rule="not-utf8", fixable=False,
                                        message=f"not UTF-8 text ({exc.reason}); re-save it as UTF-8"))
    return texts, findings


def lint_home(home: Path, max_words: int = DEFAULT_MAX_WORDS) -> list[Finding]:
    """Every finding of the vault at ``home``, sorted by file, line and rule."""
    texts, findings = scan_articles(home)
    pages = {f"{FOLDER}/{p.stem}" for p in (home / FOLDER).glob("*.md")} if (home / FOLDER).is_dir() else set()
    findings += lint_vault(texts, max_words, pages)
    return sorted(findings, key=lambda f: (f.file, f.line, f.rule, f.message))


@dataclass
class FixReport:
    run_id: str
    changed: list[str] = field(default_factory=list)  # vault files written, relative to the home
    wikify_kept: dict[str, list[str]] = field(default_factory=dict)
    footnotes_dropped: int = 0
    commit: str | None = None
    before: list[Finding] = field(default_factory=list)
    after: list[Finding] = field(default_factory=list)

    @property
    def unfixed(self) -> list[Finding]:
        """Fixable findings that survived the fix (each is a bug or needs a person)."""
        return [f for f in self.after if f.fixable]


def _snapshot(home: Path) -> dict[str, str]:
    """The Markdown pages the fix may write (articles, Talk, Meta): path → text."""
    out = {}
    for folder in ("articles", "Talk", "Meta"):
        for path in sorted((home / folder).glob("*.md")):
            if path.is_file():
                out[f"{folder}/{path.name}"] = path.read_bytes().decode("utf-8", errors="replace")
    return out


def fix_home(settings: Settings, max_words: int = DEFAULT_MAX_WORDS) -> FixReport:
    """Normalize and wikify every article, then commit once, under the writer lock.

    Footnotes go first (the cleanup's gate would refuse an article whose footnotes are
    broken), then wikify, then normalize again for the links See also gained. Running it a
    second time changes nothing and commits nothing.
    """
    with writing(settings, "memvault lint --fix") as session:
        return _fix(session.vault, max_words)


def _fix(vault: Vault, max_words: int) -> FixReport:
    home = vault.home
    vault.check_writable()
    report = FixReport(run_id="lint-" + datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S"))
    report.before = lint_home(home, max_words)
    before = _snapshot(home)
    # Escapes the source did not have and no-model leads whose counts drifted (lint_wiki).
    for path, text in vault.read_articles().values():
        vault.write(path, fix_escapes_and_lead(text))
    first = normalize_vault(vault, report.run_id)
    # A person's H1 is kept as written: a mismatch with the file name is theirs to settle.
    cleaned = clean_articles(vault, trust_h1=True)
    second = normalize_vault(vault, report.run_id)
    report.wikify_kept = cleaned.kept
    report.footnotes_dropped = first.footnotes_dropped + second.footnotes_dropped
    after = _snapshot(home)
    report.changed = sorted(p for p in after if before.get(p) != after[p])
    if report.changed:
        n = len({*first.changed, *cleaned.changed, *second.changed})
        report.commit = vault.commit(f"memvault lint --fix ({report.run_id}): {n} article(s) normalized and wikified"
                                     + (f", {report.footnotes_dropped} orphan footnote(s) dropped (see Talk/)"
                                        if report.footnotes_dropped else ""))
    report.after = lint_home(home, max_words)
    return report
