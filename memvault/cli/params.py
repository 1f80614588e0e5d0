"""Parameter types the commands share: Annotated options and the Enums Typer offers as choices.

Only light imports here: every command module imports this at `memvault --help` time.
"""

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from tasks.pipeline import STAGES


# Typer validates choices from an Enum (it cannot take a list of Literals). Written out so mypy
# sees the members; tests/cli/test_cli.py checks they are the pipeline's STAGES, in order.
class Stage(StrEnum):
    """The pipeline's stages (tasks.pipeline.StageName, checked by a test)."""

    INGEST = "ingest"
    CHUNK = "chunk"
    CLUSTER = "cluster"
    SYNTHESIZE = "synthesize"
    WIKIFY = "wikify"
    NORMALIZE = "normalize"
    CHANGELOG = "changelog"
    INDEX = "index"


class Engine(StrEnum):
    """The `engine` setting's choices (memvault.engines.settings.EngineName, checked by a test)."""

    AUTO = "auto"
    MLX = "mlx"
    OPENAI = "openai"
    NONE = "none"


STAGE_LIST = ", ".join(STAGES)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON instead of text.")]
DryRunFlag = Annotated[bool, typer.Option("--dry-run", help="Print every file and command; change nothing.")]
AtOpt = Annotated[str | None, typer.Option("--at", metavar="HH:MM",
                                           help="Nightly run time, 24-hour (default [schedule] at, 03:00).")]
UnitDirOpt = Annotated[Path | None, typer.Option(
    "--unit-dir", metavar="PATH", envvar="MEMVAULT_UNIT_DIR",
    help="Where agents/units go (default ~/Library/LaunchAgents or ~/.config/systemd/user).")]
PlatformOpt = Annotated[str | None, typer.Option("--platform", metavar="NAME",
                                                 help="darwin or linux (default: this machine).")]
TitleArg = Annotated[str, typer.Argument(metavar="TITLE", help="Article title or file stem.", show_default=False)]
