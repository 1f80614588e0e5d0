"""Every CLI command and every setting is documented."""

from pathlib import Path

from pydantic import BaseModel

from memvault.cli import app
from memvault.config.settings import Settings

DOCS = Path(__file__).resolve().parent.parent / "docs"


def command_names() -> list[str]:
    return [c.name or c.callback.__name__ for c in app.registered_commands]


def test_every_command_is_documented_with_an_example() -> None:
    text = (DOCS / "cli.md").read_text()
    for name in command_names():
        assert f"\n## {name}\n" in text, f"docs/cli.md has no section for `{name}`"
        assert f"memvault {name}" in text or f"memvault --home ~/memvault {name}" in text


def test_every_command_help_has_an_example() -> None:
    for c in app.registered_commands:
        assert "Example:" in (c.callback.__doc__ or ""), f"{c.callback.__name__} help lacks an example"


def test_every_command_summary_is_one_line() -> None:
    # `memvault --help` shows the first paragraph as it is written: a line break there breaks its table.
    for c in app.registered_commands:
        summary = (c.callback.__doc__ or "").strip().split("\n\n")[0]
        assert "\n" not in summary, f"{c.callback.__name__}: put the first line of its help on one line"


def test_every_setting_is_documented() -> None:
    text = (DOCS / "configuration.md").read_text()
    for name, field in Settings.model_fields.items():
        assert f"`{name}`" in text or f"[{name}]" in text or f"[[{name}]]" in text
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            for key, sub in field.annotation.model_fields.items():
                assert f"`{key}`" in text, f"docs/configuration.md lacks [{name}] {key}"
                assert sub.description, f"{name}.{key} has no description"
