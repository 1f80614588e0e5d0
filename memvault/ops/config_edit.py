"""Edits memvault makes to a TOML file the user owns, keeping everything else as it was.

`memvault.toml` (a new source, the client's ``[hub]`` table) and Codex's ``config.toml`` (its
``[mcp_servers.memvault]`` table) are the user's files: comments, order and spacing survive,
because they are parsed and rewritten with tomlkit, which keeps a document's formatting.
Each edit returns the new text; the caller shows a diff and writes it.
"""

import difflib
from pathlib import Path
from typing import Any

from memvault.errors import ConfigError


def _parse(text: str, path: Path) -> Any:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        return tomlkit.parse(text)
    except TOMLKitError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}) — fix it, then run the command again; "
                          "nothing was written") from None


def read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.exists() else ""


def with_source(text: str, path: Path, kind: str, folder: str) -> str:
    """``text`` (memvault.toml) with a ``[[sources]]`` table for ``folder`` unless one names it."""
    import tomlkit

    doc = _parse(text, path)
    sources = doc.get("sources")
    wanted = str(Path(folder).expanduser())
    if sources is not None:
        for table in sources:
            if str(Path(str(table.get("path", ""))).expanduser()) == wanted:
                return text
    else:
        sources = tomlkit.aot()
        doc.append("sources", sources)
    table = tomlkit.table()
    table.add("kind", kind)
    table.add("path", folder)
    sources.append(table)
    return str(tomlkit.dumps(doc))


def with_table(text: str, path: Path, dotted: tuple[str, ...], values: dict[str, Any]) -> str:
    """``text`` with the table ``dotted`` (e.g. ``("mcp_servers", "memvault")``) set to
    ``values``: keys of ours replaced, other keys of that table and every other table kept."""
    import tomlkit

    doc = _parse(text, path)
    parent: Any = doc
    for name in dotted[:-1]:
        if name not in parent:
            parent.add(name, tomlkit.table(is_super_table=True))
        parent = parent[name]
        if not isinstance(parent, dict):
            raise ConfigError(f"`{name}` in {path} is not a table — fix it by hand; nothing was written")
    last = dotted[-1]
    if last in parent and not isinstance(parent[last], dict):
        raise ConfigError(f"`{'.'.join(dotted)}` in {path} is not a table — fix it by hand; nothing was written")
    if last not in parent:
        parent.add(last, tomlkit.table())
    table = parent[last]
    for key, value in values.items():
        if value is None:
            if key in table:
                del table[key]
        elif table.get(key) != value:
            table[key] = value
    return str(tomlkit.dumps(doc))


def diff(path: Path, before: str, after: str) -> str:
    """A unified diff of one file's edit ('' when nothing changes)."""
    if before == after:
        return ""
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        fromfile=str(path), tofile=str(path)))
