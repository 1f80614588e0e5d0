"""Commands of the editorial area: `lint` and `forget`."""

from typing import Annotated, Any

import typer

from memvault.cli.app import app
from memvault.cli.context import home_settings
from memvault.cli.output import console, emit_json, err_console, reporting
from memvault.cli.params import JsonFlag

PANEL = "Editorial"


def _finding_line(f: Any, warn: bool = False) -> str:
    tag = "warning" if warn else ("fixable" if f.fixable else "error")
    return f"{f.file}:{f.line}: [{tag}] {f.rule}: {f.message}"


@app.command(rich_help_panel=PANEL)
def lint(
    ctx: typer.Context,
    fix: Annotated[bool, typer.Option("--fix", help="Normalize and wikify the whole vault, in one commit.")] = False,
    max_words: Annotated[int, typer.Option("--max-words", metavar="N",
                                           help="Articles longer than this are reported as oversize.")] = 3000,
    as_json: JsonFlag = False,
) -> None:
    """Check every article (footnotes, links, structure, names, files) and report file:line findings.

    Exit 1 when there are problems, 0 when clean. With --fix: exit 0 when every fixable
    problem was fixed; what needs a person (dangling links, names) is listed as warnings.

    Example: memvault lint --fix
    """
    from memvault.errors import UsageError
    from memvault.ops.lint import fix_home, lint_home

    with reporting(as_json):
        if max_words < 1:
            raise UsageError("--max-words must be at least 1")
        settings = home_settings(ctx)
        if not fix:
            findings = lint_home(settings.home, max_words)
            if as_json:
                emit_json({"findings": [f.model_dump() for f in findings], "problems": len(findings)})
            else:
                for f in findings:
                    console.print(_finding_line(f), highlight=False, markup=False)
                fixable = sum(f.fixable for f in findings)
                console.print(f"{len(findings)} problem(s), {fixable} fixable with `memvault lint --fix`"
                              if findings else "clean: no problems found", highlight=False)
            raise typer.Exit(1 if findings else 0)

        report = fix_home(settings, max_words)
        fixed = len([f for f in report.before if f.fixable]) - len(report.unfixed)
        if as_json:
            emit_json({"fixed": max(fixed, 0), "changed": report.changed, "commit": report.commit,
                       "footnotes_dropped": report.footnotes_dropped, "wikify_kept": report.wikify_kept,
                       "findings": [f.model_dump() for f in report.after], "problems": len(report.unfixed)})
        else:
            for path in report.changed:
                console.print(f"fixed {path}", highlight=False, markup=False)
            for f in report.after:
                console.print(_finding_line(f, warn=not f.fixable), highlight=False, markup=False)
            for stem, reasons in report.wikify_kept.items():
                err_console.print(f"wikify left {stem} as it was: {'; '.join(reasons)}", highlight=False, markup=False)
            console.print(f"{len(report.changed)} file(s) changed"
                          + (f", committed {report.commit[:10]}" if report.commit else ", nothing to commit")
                          + f"; {len(report.after) - len(report.unfixed)} warning(s) need a person", highlight=False)
        raise typer.Exit(1 if report.unfixed else 0)


@app.command(rich_help_panel=PANEL)
def forget(
    ctx: typer.Context,
    title: Annotated[str | None, typer.Argument(metavar="TITLE", show_default=False,
                                                help="Article title or file stem.")] = None,
    conversation: Annotated[str | None, typer.Option(
        "--conversation", metavar="ID", help="A conversation id (conv:1a2b3c4d; any unique prefix).")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Remove an article (in a git commit, recoverable) or a conversation (ledger, index, citations).

    Example: memvault forget "Postgres Backup" --yes
    """
    from memvault.errors import UsageError
    from memvault.ops import forget as core

    with reporting(as_json):
        if (title is None) == (conversation is None):
            raise UsageError("give either an article TITLE or --conversation conv:ID (one of them)")
        settings = home_settings(ctx)
        if title is not None:
            plan = core.plan_article(settings, title)
            question = (f"Forget the article '{plan.title}' ({plan.path}"
                        + (f" and {plan.talk}" if plan.talk else "") + ")? It stays in git history.")
        else:
            assert conversation is not None  # one of the two is given (checked above)
            cplan = core.plan_conversation(settings, conversation)
            where = ", ".join(f"{s} ({n})" for s, n in sorted(cplan.articles.items()))
            question = (f"Forget conversation conv:{cplan.short} ({cplan.source}, {cplan.title or 'untitled'})? "
                        f"Its messages, chunks and index nodes are deleted"
                        + (f", and its citations and the prose only it supports removed from: {where}." if where
                           else "; no article cites it."))
        if not yes and not typer.confirm(question, err=True):
            raise typer.Exit(1)
        if title is not None:
            result: Any = core.forget_article(settings, title)
            data = result.__dict__
            text = (f"forgot '{result.title}': removed {', '.join(result.removed)}, {result.nodes_deleted} "
                    f"index node(s); commit {(result.commit or 'none')[:10]}\nrecover with: {result.recover}")
        else:
            assert conversation is not None
            result = core.forget_conversation(settings, conversation)
            data = result.__dict__
            text = (f"forgot conv:{cplan.short}: {sum(result.ledger_rows.values())} ledger row(s), "
                    f"{result.nodes_deleted} index node(s), citations removed from {len(result.articles)} "
                    f"article(s), {result.sentences_removed} sentence(s) and {result.sections_removed} section(s) "
                    f"it alone supported removed"
                    + (f" (articles left empty and removed: {', '.join(result.articles_removed)})"
                       if result.articles_removed else "")
                    + f"; commit {(result.commit or 'none')[:10]}")
        if as_json:
            emit_json(data)
        else:
            console.print(text, highlight=False, markup=False)
