"""The agent hooks' fast path: `capture` and `prompt-recall` without Typer.

Typer, rich and the command modules cost more than the whole capture; a hook's command line
is simple, so ``memvault.cli.main`` parses it here and falls back to Typer for anything else
(help, unknown flags). Standard library and ``memvault.ops.capture`` / ``prompt_recall`` only.
"""

import sys


def run_capture(home: str | None, source: str, payload: str | None) -> int:
    """Spool one hook event (the payload argument, else stdin); always 0."""
    from memvault.ops.capture import capture, resolve_home

    raw = payload if payload is not None else ("" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read())
    root = resolve_home(home)
    try:
        capture(root, raw, source)
    except Exception as exc:  # noqa: BLE001 - a hook must never break the agent; the log says what
        from memvault.spool import log_line

        log_line(root / ".memvault", f"capture failed unexpectedly: {type(exc).__name__}: {exc}")
    return 0


def run_prompt_recall(home: str | None) -> int:
    """Print the recall block for the hook's prompt, or nothing; always 0."""
    from memvault.ops.capture import resolve_home
    from memvault.ops.prompt_recall import prompt_recall

    raw = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
    root = resolve_home(home)
    try:
        text, _how = prompt_recall(root, raw)
    except Exception as exc:  # noqa: BLE001 - a hook must never break the agent; the log says what
        from memvault.spool import log_line

        log_line(root / ".memvault", f"prompt-recall failed unexpectedly: {type(exc).__name__}: {exc}")
        text = ""
    if text:
        sys.stdout.write(text + "\n")
    return 0


def fast_hook(argv: list[str]) -> int | None:
    """Run a hook command without Typer when ``argv`` is ``[--home H] capture [--source K]
    [PAYLOAD]`` or ``[--home H] prompt-recall``; None for anything else (Typer handles it)."""
    args = list(argv)
    home = None
    if len(args) >= 2 and args[0] == "--home":
        home, args = args[1], args[2:]
    elif args and args[0].startswith("--home="):
        home, args = args[0].split("=", 1)[1], args[1:]
    if args == ["prompt-recall"]:
        return run_prompt_recall(home)
    if not args or args[0] != "capture" or any(a in ("-h", "--help") for a in args):
        return None
    rest, source = args[1:], "claude-code"
    if len(rest) >= 2 and rest[0] == "--source":
        source, rest = rest[1], rest[2:]
    if len(rest) > 1 or (rest and rest[0].startswith("-")):
        return None
    return run_capture(home, source, rest[0] if rest else None)


