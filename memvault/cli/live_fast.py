"""The agent hooks' fast path: `capture`, `prompt-recall` and `index-brief` without Typer.

Typer, rich and the command modules cost more than the whole capture; a hook's command line
is simple, so ``memvault.cli.main`` parses it here and falls back to Typer for anything else
(help, unknown flags). Standard library and ``memvault.ops.capture`` / ``prompt_recall`` /
``memvault.live.hookd_client`` only: the answers come from the home's hook daemon.
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
        from memvault.live.spool import log_line

        log_line(root / ".memvault", f"capture failed unexpectedly: {type(exc).__name__}: {exc}")
    return 0


def run_prompt_recall(home: str | None) -> int:
    """Print the recall block for the hook's prompt, or nothing; always 0."""
    from memvault.ops.capture import resolve_home
    from memvault.ops.prompt_recall import prompt_recall

    raw = read_stdin()
    root = resolve_home(home)
    try:
        text, _how = prompt_recall(root, raw)
    except Exception as exc:  # noqa: BLE001 - a hook must never break the agent; the log says what
        from memvault.live.spool import log_line

        log_line(root / ".memvault", f"prompt-recall failed unexpectedly: {type(exc).__name__}: {exc}")
        text = ""
    if text:
        sys.stdout.write(text + "\n")
    return 0


def read_stdin(limit: int = 8 << 20) -> bytes:
    """Up to ``limit`` + 1 bytes of stdin (so a longer payload is seen as too long, not parsed)."""
    if sys.stdin is None or sys.stdin.isatty():
        return b""
    return sys.stdin.buffer.read(limit + 1)


def run_index_brief(home: str | None) -> int:
    """Print the article index block: from the hook daemon (started here, not waited for — this
    call answers itself), else read from the vault in process."""
    from memvault.live import hookd_client
    from memvault.ops.capture import resolve_home

    root = resolve_home(home)
    answer = hookd_client.ask(root, {"op": "index-brief"}, wait=False)
    if answer is not None and isinstance(answer.get("text"), str):
        text = answer["text"]
    else:
        from memvault.ops.agent_setup import index_brief

        text = index_brief(root)
    sys.stdout.write(text + "\n")
    return 0


def parse_hook(argv: list[str]) -> tuple[str, str | None, str, str | None] | None:
    """``(command, home, source, payload)`` when ``argv`` (without the program name) is
    ``[--home H] capture [--source K] [PAYLOAD]``, ``[--home H] prompt-recall`` or
    ``[--home H] index-brief``; None for
    anything else (Typer handles it, help included)."""
    args = list(argv)
    home = None
    if len(args) >= 2 and args[0] == "--home":
        home, args = args[1], args[2:]
    elif args and args[0].startswith("--home="):
        home, args = args[0].split("=", 1)[1], args[1:]
    if args in (["prompt-recall"], ["index-brief"]):
        return args[0], home, "", None
    if not args or args[0] != "capture":
        return None
    rest, source = args[1:], "claude-code"
    if len(rest) >= 2 and rest[0] == "--source":
        source, rest = rest[1], rest[2:]
    if len(rest) > 1 or (rest and rest[0].startswith("-")):
        return None
    return "capture", home, source, rest[0] if rest else None


def is_hook_process(argv: list[str]) -> bool:
    """True when this process is the `memvault` command running a hook."""
    return bool(argv) and argv[0].rsplit("/", 1)[-1] == "memvault" and parse_hook(argv[1:]) is not None


def run_hook(argv: list[str]) -> int:
    """Run the hook ``argv`` names (``is_hook_process`` must hold)."""
    parsed = parse_hook(argv[1:])
    assert parsed is not None
    command, home, source, payload = parsed
    if command == "index-brief":
        return run_index_brief(home)
    return run_prompt_recall(home) if command == "prompt-recall" else run_capture(home, source, payload)
