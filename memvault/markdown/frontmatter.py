"""Article front matter for Obsidian: `aliases` (so `[[Tidepool Station]]` finds
`Tidepool_Station.md`) and `tags` (from the article's bucket).

File stems use underscores and Obsidian matches a note by its file name or its `aliases:`, so
every article carries its spaced title as an alias. Aliases are only ever added: a title that
an article had before a rename (its H1 changed by hand, say) stays an alias, so old links and
old habits keep working. Tags come from the `#hashtags` of the bucket's description in
Meta/Buckets.md and are merged with the tags a person wrote. Every other key of the front
matter is kept.

`with_front_matter` is what the normalize stage calls on every article; it is idempotent, and
it leaves an article byte for byte alone when its front matter already says all of that (so
a person's formatting and comments survive). Front matter that is not valid YAML, or not a
mapping, is left as it is: lint reports it as bad-front-matter and a person mends it.
"""

import re
from collections.abc import Iterable
from typing import Any

from memvault.markdown.scan import normalize_newlines, split_front_matter

# An Obsidian tag: starts with a letter, then letters, digits, `_`, `-` or `/` (nested tags).
_HASHTAG = re.compile(r"(?<![\w#&/])#([^\W\d_][\w/-]*)")


class FrontMatterError(ValueError):
    """The article's front matter is not a YAML mapping; it is left for a person to mend."""


def parse(text: str) -> tuple[dict[str, Any] | None, str, str]:
    """(front matter as a mapping or None when there is none, the front matter's raw text, the body).

    Raises FrontMatterError when there is front matter but it is not a valid YAML mapping.
    """
    front, body = split_front_matter(normalize_newlines(text))
    if not front:
        return None, "", body
    inner = "\n".join(front.split("\n")[1:-2])  # between the `---` lines (front ends with "---\n")
    import yaml  # here, not at the top: recall imports this module and never reads front matter

    try:
        data = yaml.safe_load(inner) if inner.strip() else {}
    except yaml.YAMLError as exc:
        raise FrontMatterError(f"front matter is not valid YAML: {exc}") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise FrontMatterError(f"front matter is a {type(data).__name__}, not a mapping of keys to values")
    return data, front, body


def _names(value: Any) -> list[str]:
    """A front-matter list value (a list, or one string; Obsidian accepts `tags: a, b` too)."""
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    return [" ".join(str(v).split()) for v in items if str(v).strip()]


def _key(name: str) -> str:
    return " ".join(name.split()).casefold()


def _merge(first: Iterable[str], then: Iterable[str]) -> list[str]:
    """``first`` then ``then``, without repeats (compared case- and space-insensitively)."""
    out: list[str] = []
    seen: set[str] = set()
    for name in [*first, *then]:
        if name and _key(name) not in seen:
            seen.add(_key(name))
            out.append(name)
    return out


def bucket_tags(description: str) -> list[str]:
    """The `#tags` written in a bucket's description (Meta/Buckets.md), without the `#`."""
    return _merge([], (m.group(1).rstrip("/-") for m in _HASHTAG.finditer(description or "")))


def wanted_aliases(title: str | None, stem: str, existing: Iterable[str]) -> list[str]:
    """The article's aliases: its title, its stem spelled with spaces, then every alias it had."""
    spaced = " ".join(stem.replace("_", " ").split())
    return _merge([t for t in (title, spaced) if t], existing)


def render(data: dict[str, Any]) -> str:
    """Front matter block (`---` … `---`) for ``data``, as block-style YAML."""
    import yaml

    dumped = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000)
    return f"---\n{dumped}---\n"


def with_front_matter(text: str, title: str | None, stem: str, tags: Iterable[str] = ()) -> str:
    """``text`` whose front matter lists the aliases and tags it should (see the module docstring).

    Raises FrontMatterError when the existing front matter cannot be read; the caller keeps
    the text as it is.
    """
    data, front, body = parse(text)
    data = dict(data or {})
    aliases = wanted_aliases(title, stem, _names(data.get("aliases")) + _names(data.get("alias")))
    tag_list = _merge(_tag_names(data.get("tags")), tags)
    have_aliases = _names(data.get("aliases"))
    have_tags = _tag_names(data.get("tags"))
    if front and have_aliases == aliases and have_tags == tag_list and "alias" not in data:
        return text  # already says it all: keep the person's formatting
    data.pop("alias", None)  # the old singular key, folded into `aliases`
    out = {"aliases": aliases, **{k: v for k, v in data.items() if k != "aliases"}}
    if tag_list:
        out["tags"] = tag_list
    return render(out) + body.lstrip("\n") if body.strip() else render(out)


def _tag_names(value: Any) -> list[str]:
    """Tags as written: a list, or one string of comma- or space-separated tags; `#` dropped."""
    if isinstance(value, str):
        value = [t for t in re.split(r"[,\s]+", value) if t]
    return [t.lstrip("#") for t in _names(value)]


def aliases(text: str) -> list[str]:
    """The `aliases:` of an article (`alias:` too); [] when it has no front matter.

    Raises FrontMatterError when the front matter cannot be read.
    """
    data, _, _ = parse(text)
    if not data:
        return []
    return _merge(_names(data.get("aliases")), _names(data.get("alias")))
