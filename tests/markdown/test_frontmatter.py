"""Front matter for Obsidian (aliases, tags), Talk pages' quoted markers, See also without
dangling links — and the gate, lint and tree reading articles that carry front matter."""

import re

import pytest
import yaml

from memvault.markdown.frontmatter import FrontMatterError, bucket_tags, with_front_matter
from memvault.markdown.gate import gate, word_count
from memvault.markdown.lint import lint_vault
from memvault.markdown.scan import Doc
from memvault.markdown.talk import quote_markers, quote_page_markers
from memvault.markdown.tree import article_nodes
from memvault.markdown.wikilinks import drop_dangling_see_also, known_from_texts

ARTICLE = """# Tidepool Station

**Tidepool Station** is the NOAA station the tidepool app reads by default.[^1]

## Setup

Station 9414750 is read every ten minutes, see [[Home_Lab_Backups]].[^1]

## References

[^1]: `conv:1a2b3c4d` (2026-01-02, claude-code) — tides
"""

_FRONT = re.compile(r"\A---\n(.*?\n)---\n", re.S)


def front_of(text: str) -> dict:
    """The front matter as YAML reads it (independently of the module under test)."""
    m = _FRONT.match(text)
    assert m, f"no front matter in:\n{text[:200]}"
    data = yaml.safe_load(m.group(1))
    assert isinstance(data, dict)
    return data


def test_an_article_gets_its_spaced_title_as_an_alias_and_its_body_stays_verbatim() -> None:
    out = with_front_matter(ARTICLE, "Tidepool Station", "Tidepool_Station")
    assert front_of(out) == {"aliases": ["Tidepool Station"]}
    assert out.endswith(ARTICLE)  # the article itself, byte for byte
    assert with_front_matter(out, "Tidepool Station", "Tidepool_Station") == out  # idempotent


def test_aliases_are_only_added_so_a_former_title_stays() -> None:
    first = with_front_matter(ARTICLE, "Tidepool Station", "Tidepool_Station")
    renamed = first.replace("# Tidepool Station", "# Tide Station 9414750")
    out = with_front_matter(renamed, "Tide Station 9414750", "Tidepool_Station")
    assert front_of(out)["aliases"] == ["Tide Station 9414750", "Tidepool Station"]


def test_tags_merge_with_a_persons_keys_which_are_kept() -> None:
    hand = "---\ncssclass: wide\ntags: [tides]\nalias: NOAA station\n---\n" + ARTICLE
    out = with_front_matter(hand, "Tidepool Station", "Tidepool_Station",
                            bucket_tags("Tide stations #tides #noaa/stations, not #1 or C#"))
    assert front_of(out) == {"aliases": ["Tidepool Station", "NOAA station"], "cssclass": "wide",
                             "tags": ["tides", "noaa/stations"]}
    assert out.endswith(ARTICLE)


def test_front_matter_that_already_says_it_all_is_left_byte_for_byte() -> None:
    hand = "---\n# my note\naliases:\n  - Tidepool Station   # the title\nrating: 5\n---\n" + ARTICLE
    assert with_front_matter(hand, "Tidepool Station", "Tidepool_Station") == hand


@pytest.mark.parametrize("front", ["---\naliases: [unclosed\n---\n", "---\n- a\n- b\n---\n"])
def test_front_matter_that_is_not_a_mapping_is_refused(front: str) -> None:
    with pytest.raises(FrontMatterError):
        with_front_matter(front + ARTICLE, "Tidepool Station", "Tidepool_Station")


def test_titles_that_need_quoting_stay_valid_yaml() -> None:
    title = 'C++: "templates" & #includes — [notes]'
    out = with_front_matter(f"# {title}\n\nLead.\n", title, "C++_templates_includes_notes")
    assert front_of(out)["aliases"] == [title, "C++ templates includes notes"]


def test_gate_lint_and_tree_read_past_front_matter() -> None:
    out = with_front_matter(ARTICLE, "Tidepool Station", "Tidepool_Station", ["tides"])
    assert word_count(out) == word_count(ARTICLE)
    assert gate(out, ARTICLE) == [] and gate(ARTICLE, out) == []
    files = {"articles/Tidepool_Station.md": out, "articles/Home_Lab_Backups.md": "# Home Lab Backups\n\nLead.\n"}
    assert lint_vault(files) == []
    nodes = article_nodes("Tidepool_Station", out)
    assert all("aliases" not in n.text and "tides\n" not in n.text for n in nodes)
    setup = next(n for n in nodes if n.title == "Setup")
    # Line numbers are the file's, front matter included.
    assert out.split("\n")[setup.line - 1] == "## Setup"


def test_an_alias_resolves_a_spaced_link() -> None:
    texts = {"Tidepool_Station": with_front_matter(ARTICLE, "Tidepool Station", "Tidepool_Station")}
    known, broken = known_from_texts(texts)
    assert known["tidepool station"] == "Tidepool_Station" and not broken


def test_talk_pages_quote_markers_they_do_not_define() -> None:
    assert quote_markers("dropped orphan definition [^3]: `conv:1a2b3c4d`") == \
        "dropped orphan definition `[^3]`: `conv:1a2b3c4d`"
    assert quote_markers("already `[^3]` quoted") == "already `[^3]` quoted"
    page = "# Talk: X\n\n- marker [^2] has no definition\n- a note of mine[^mine]\n\n[^mine]: my own footnote\n"
    out = quote_page_markers(page)
    assert out == page.replace("marker [^2]", "marker `[^2]`")
    assert quote_page_markers(out) == out
    # Rendered, no marker is left for a reader to take as an undefined footnote.
    assert not [d for d in Doc(out, front_matter=False).lines if re.search(r"(?<!`)\[\^2\](?!`)", d)]


def test_see_also_keeps_only_articles_that_exist() -> None:
    text = ("# A\n\nLead [[B]] and [[Missing_Page]].\n\n## See also\n\n- [[B]]\n- [[Missing_Page]]\n"
            "- [[Other missing]] — with a note, kept as written\n\n## References\n")
    known, _ = known_from_texts({"A": "# A\n", "B": "# B\n"})
    out, removed = drop_dangling_see_also(text, known)
    assert removed == ["Missing_Page"]
    assert "- [[Missing_Page]]" not in out and "Lead [[B]] and [[Missing_Page]]." in out
    assert "- [[Other missing]] — with a note" in out
    only = "# A\n\nLead.\n\n## See also\n\n- [[Gone]]\n\n## References\n\n[^1]: x\n"
    out, removed = drop_dangling_see_also(only, known)
    assert removed == ["Gone"] and out == "# A\n\nLead.\n\n## References\n\n[^1]: x\n"
