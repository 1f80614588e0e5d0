"""Reading memvault.toml and saying what is wrong with a setting, and where it came from.

A TOML syntax error names the file, line and column; an unknown key names the file (or the
environment variable) and the closest valid key; a value out of range names the setting and
the rule it breaks. The caller (``memvault.config.settings.load_settings``) raises ConfigError with
these messages, so a typo never silently falls back to a default.
"""

import ast
import difflib
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from memvault.errors import ConfigError

DOCS_HINT = "docs/configuration.md lists every setting"
ENV_PREFIX = "MEMVAULT_"
_DECLARED_TWICE = re.compile(r"^Cannot declare (?P<key>\(.*\)) twice$")  # tomllib's words for a duplicate table
_TOML_WHERE = re.compile(r"^(?P<msg>.*?) \(at (?:line (?P<line>\d+), column (?P<col>\d+)|end of document)\)$")

Loc = tuple[int | str, ...]


def read_toml(path: Path) -> dict[str, Any]:
    """The parsed file; a syntax error (or a table declared twice) is a ConfigError with its line and column."""
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        match = _TOML_WHERE.match(str(exc))
        if match and match["line"]:
            where = f"{path}, line {match['line']}, column {match['col']}"
        else:
            where = f"{path}, at the end of the file"
        reason = match["msg"] if match else str(exc)
        if twice := _DECLARED_TWICE.match(reason):
            reason = f"[{'.'.join(ast.literal_eval(twice['key']))}] is declared twice"
        raise ConfigError(f"{where}: {reason} — the file is not valid TOML; fix that spot and try again") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text (byte {exc.start}) — save it as UTF-8 and try again") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None


def unknown_top_level_keys(data: Mapping[str, Any], model: type[BaseModel], path: Path) -> list[str]:
    """Problems for keys at the top of memvault.toml that are no setting (the root model ignores extras)."""
    problems = []
    for key, value in data.items():
        if key in model.model_fields:
            continue
        what = f"unknown section [{key}]" if isinstance(value, dict) else f"unknown setting `{key}` at the top level"
        problems.append(f"{path}: {what}{_suggestion(key, model, section=isinstance(value, dict))}")
    return problems


def describe_errors(exc: ValidationError, model: type[BaseModel], *, toml: Path, data: Mapping[str, Any],
                    flags: Mapping[str, Any]) -> list[str]:
    """One line per pydantic error: where the value came from, which setting, what is wrong."""
    return [_describe(error, model, toml, data, flags) for error in exc.errors()]


def combine(problems: list[str]) -> str:
    """The ConfigError message for one or more problems."""
    if len(problems) == 1:
        return f"{problems[0]} ({DOCS_HINT})"
    return f"{len(problems)} problems in the settings:\n" + "\n".join(f"  - {p}" for p in problems) + f"\n({DOCS_HINT})"


def _describe(error: Any, model: type[BaseModel], toml: Path, data: Mapping[str, Any],
              flags: Mapping[str, Any]) -> str:
    loc: Loc = tuple(error["loc"])
    origin = _origin(loc, toml, data, flags)
    if error["type"] == "extra_forbidden":
        parent = _model_at(model, loc[:-1])
        key = str(loc[-1])
        suggestion = _suggestion(key, parent) if parent else ""
        return f"{origin}: unknown setting `{key}` in {_section(loc[:-1])}{suggestion}"
    if error["type"] == "missing":
        return f"{origin}: `{_dotted(loc)}` is required in {_section(loc[:-1])}"
    return f"{origin}: `{_dotted(loc)}` = {error['input']!r}: {error['msg']}"


def _origin(loc: Loc, toml: Path, data: Mapping[str, Any], flags: Mapping[str, Any]) -> str:
    """Where the offending value came from, by precedence: a flag, the environment, the file."""
    for depth in (len(loc), len(loc) - 1):
        if depth < 1:
            break
        part = loc[:depth]
        if _has(flags, part):
            return "a command-line flag"
        name = _env_name(part)
        if name:
            return f"environment variable {name}"
        if _has(data, part):
            return str(toml)
    return "the settings"


def _env_name(loc: Loc) -> str | None:
    """The MEMVAULT_* variable (any case, as pydantic-settings reads them) that sets ``loc``."""
    wanted = (ENV_PREFIX + "__".join(str(p) for p in loc)).upper()
    return next((name for name in os.environ if name.upper() == wanted), None)


def _has(container: Any, loc: Loc) -> bool:
    for part in loc:
        if isinstance(part, int) and isinstance(container, list) and part < len(container):
            container = container[part]
        elif isinstance(part, str) and isinstance(container, Mapping) and part in container:
            container = container[part]
        else:
            return False
    return True


def _model_at(model: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    """The section model found by following ``loc`` from the root (list indexes skipped)."""
    current: type[BaseModel] | None = model
    for part in loc:
        if isinstance(part, int):
            continue
        if current is None or part not in current.model_fields:
            return None
        current = _model_type(current.model_fields[part].annotation)
    return current


def _model_type(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) in (list, Union, UnionType):
        for arg in get_args(annotation):
            if arg is not NoneType and (found := _model_type(arg)):
                return found
    return None


def _suggestion(key: str, model: type[BaseModel], section: bool = False) -> str:
    names = list(model.model_fields)
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
    if close:
        return f" — did you mean [{close[0]}]?" if section else f" — did you mean `{close[0]}`?"
    return " — valid keys: " + ", ".join(names)


def _section(loc: Loc) -> str:
    if not loc:
        return "the top level"
    if isinstance(loc[-1], int):
        return f"[[{_dotted(loc[:-1])}]] entry {loc[-1] + 1}"
    return f"[{_dotted(loc)}]"


def _dotted(loc: Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
