"""How `--help` reads: real metavars (QUERY, PATH, HH:MM), no type after a flag, `-h` too.

Typer 0.29 prints `<bool>` after every flag and wraps a required argument as `{query}` in the
usage line. The command and group classes here print what click conventionally shows instead:
`memvault search [OPTIONS] QUERY`, `--dry-run` with nothing after it, `--at HH:MM`.
"""

from collections.abc import Callable
from typing import Any

import typer
# Typer 0.29 carries its own copy of click: its parameter errors are this module's classes.
from typer._click.exceptions import UsageError
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption
from typer.models import CommandFunctionType

HELP_OPTION_NAMES = ["-h", "--help"]


class _NamedArgument(TyperArgument):
    """An argument with a metavar (QUERY, PATH): the name says it all, no `<str>` after it."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None if self.metavar else super().display_type_rich(ctx)


class _Metavars:
    """Mixed into a Typer command or group: flags show no type, arguments their metavar."""

    params: list[Any]
    options_metavar: str | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
                param.metavar = ""  # a flag takes no value: nothing to show after it
            elif type(param) is TyperArgument and param.metavar:
                # Typer builds its parameters itself, with no hook for their class; the
                # subclass only changes how the help shows the argument's type.
                param.__class__ = _NamedArgument

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None:
            option.metavar = ""
        return option

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):  # type: ignore[attr-defined]
            if isinstance(param, TyperArgument):
                name = param.metavar or (param.name or "").upper()
                pieces.append((name if param.required else f"[{name}]") + ("..." if param.nargs != 1 else ""))
        return pieces


class MemvaultCommand(_Metavars, TyperCommand):
    """Every `memvault` command; under `--json` a misuse (a bad option or value) is a JSON error too."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        given = list(args)  # the parser consumes ``args`` as it goes
        try:
            return super().parse_args(ctx, args)
        except UsageError as exc:
            if "--json" not in given or "--" in given[:given.index("--json")]:
                raise
            import json

            typer.echo(json.dumps({"error": exc.format_message(), "type": "UsageError"}, indent=2))
            raise typer.Exit(exc.exit_code) from None


class MemvaultGroup(_Metavars, TyperGroup):
    """The `memvault` group itself (its usage line ends in COMMAND [ARGS]...)."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return [*super().collect_usage_pieces(ctx), self.subcommand_metavar or "COMMAND [ARGS]..."]


class MemvaultTyper(typer.Typer):
    """A Typer app whose commands are MemvaultCommands and whose help also answers to `-h`."""

    def __init__(self, **kwargs: Any) -> None:
        settings = {"help_option_names": HELP_OPTION_NAMES, **kwargs.pop("context_settings", {})}
        super().__init__(cls=MemvaultGroup, context_settings=settings, **kwargs)

    def command(self, name: str | None = None, **kwargs: Any) -> Callable[[CommandFunctionType], CommandFunctionType]:
        kwargs.setdefault("cls", MemvaultCommand)
        return super().command(name, **kwargs)
