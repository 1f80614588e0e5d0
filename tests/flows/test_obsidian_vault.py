"""The vault a real nightly run writes, read as Obsidian reads it: every article's front matter
is valid YAML with its spaced title in `aliases`, and every wikilink on every page resolves to
a file stem or an alias (the demo runs over the bundled samples; markdown-it for the links)."""

import re
from pathlib import Path

import yaml

from memvault.markdown.scan import Doc
from memvault.markdown.wikilinks import find_links
from tests.helpers import run_flow

_FRONT = re.compile(r"\A---\n(.*?\n)---\n", re.S)


def _front(text: str) -> dict:
    m = _FRONT.match(text)
    assert m, "no front matter"
    data = yaml.safe_load(m.group(1))
    assert isinstance(data, dict)
    return data


def _obsidian_names(home: Path) -> dict[str, str]:
    """What Obsidian resolves a link by: every Markdown file's name, its path in the vault
    (`Conversations/conv-1a2b3c4d`, as citations link), and every alias."""
    names: dict[str, str] = {}
    for page in sorted(home.rglob("*.md")):
        if ".memvault" in page.parts or ".obsidian" in page.parts:
            continue
        names[page.stem.casefold()] = page.stem
        names[page.relative_to(home).with_suffix("").as_posix().casefold()] = page.stem
        text = page.read_text(encoding="utf-8")
        if text.startswith("---\n"):
            for alias in _front(text).get("aliases") or []:
                names[str(alias).casefold()] = page.stem
    return names


def _unresolved(home: Path) -> list[str]:
    names = _obsidian_names(home)
    out = []
    for page in sorted(home.rglob("*.md")):
        if ".memvault" in page.parts:
            continue
        for target, _, line in find_links(page.read_text(encoding="utf-8")):
            if target.casefold() not in names:
                out.append(f"{page.relative_to(home)}:{line}: [[{target}]]")
    return out


def test_every_article_has_front_matter_with_its_spaced_title(demo_runs) -> None:
    articles = sorted((demo_runs["home"] / "articles").glob("*.md"))
    assert articles
    for path in articles:
        text = path.read_text(encoding="utf-8")
        data = _front(text)
        title = next(h.text for h in Doc(text).headings() if h.level == 1)
        assert data["aliases"][0] == title, path.name
        assert path.stem.replace("_", " ") in data["aliases"]
        # The body under the front matter is still one H1, lead, sections (the gate's structure).
        assert Doc(text).lines[0] == f"# {title}"


def test_every_wikilink_in_the_demo_vault_resolves(demo_runs) -> None:
    assert _unresolved(demo_runs["home"]) == []


def test_a_spaced_link_finds_the_article_and_normalize_keeps_it_consistent(demo_copy: Path, prefect) -> None:
    home = demo_copy
    target = next(p for p in sorted((home / "articles").glob("*.md")) if "_" in p.stem)
    spaced = target.stem.replace("_", " ")
    other = next(p for p in sorted((home / "articles").glob("*.md")) if p != target)
    # A person types the spaced title in Obsidian.
    text = other.read_text(encoding="utf-8")
    text = text.replace("\n## References", f"\n## Hand notes\n\nCompare [[{spaced}]].\n\n## References", 1)
    other.write_text(text, encoding="utf-8")
    assert spaced.casefold() in _obsidian_names(home)  # Obsidian finds it by the alias already
    # Rename the target by hand (a new H1): its former title must stay an alias.
    renamed = target.read_text(encoding="utf-8").replace(f"\n# {spaced}\n", "\n# Renamed Topic\n", 1)
    target.write_text(renamed, encoding="utf-8")
    run_flow(home, only=["normalize"])
    after = other.read_text(encoding="utf-8")
    assert f"Compare [[{target.stem}]]." in after  # a spelling of the stem becomes the stem
    aliases = _front(target.read_text(encoding="utf-8"))["aliases"]
    assert aliases[0] == "Renamed Topic" and spaced in aliases
    assert _unresolved(home) == []
