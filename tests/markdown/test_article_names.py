"""Article names: title ⇄ stem, adversarial titles, paths that stay inside the vault."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memvault.markdown.names import (
    MAX_STEM_BYTES,
    safe_path,
    stem_to_title,
    title_to_stem,
    unique_stem,
)


@pytest.mark.parametrize(
    ("title", "stem"),
    [
        ("Topic Name", "Topic_Name"),
        ("Archie Project", "Archie_Project"),
        ("  many   spaces\there ", "many_spaces_here"),
        ("a/b", "a_b"),
        ("C:\\Windows", "C_Windows"),
        ("../../etc/passwd", "etc_passwd"),
        ("..", "Untitled"),
        ("", "Untitled"),
        ("\x00\x01", "Untitled"),
        ("CON", "CON_"),
        ("nul", "nul_"),
        ("com1.txt", "com1_.txt"),  # Windows reserves a device name before any extension
        ("LPT9", "LPT9_"),
        ("Console", "Console"),
        ("evil\u202eexe.md", "evilexe.md"),
        ("a\u200fb\u200ec", "abc"),
        ("Cafe\u0301", "Café"),
        ("Wait... what", "Wait._what"),
        ("Q&A: tips [draft] #1 | v2", "Q&A_tips_draft_1_v2"),
        (".hidden", "hidden"),
        ("snake__case _ name", "snake_case_name"),
    ],
)
def test_title_to_stem(title, stem):
    assert title_to_stem(title) == stem


def test_long_titles_are_bounded_on_character_boundaries():
    assert len(title_to_stem("x" * 300).encode()) <= MAX_STEM_BYTES
    stem = title_to_stem("é" * 300)
    assert len(stem.encode()) <= MAX_STEM_BYTES and set(stem) == {"é"}


def test_stem_to_title():
    assert stem_to_title("Topic_Name") == "Topic Name"
    assert stem_to_title(title_to_stem("CON")) == "CON"


ADVERSARIAL = ["../../etc/passwd", "CON", "x" * 300, "a/b", "nul\x00byte", "\u202e\u200f", "/abs", "~/x", ".."]


@pytest.mark.parametrize("title", ADVERSARIAL)
def test_adversarial_titles_stay_inside_root(tmp_path: Path, title):
    path = safe_path(tmp_path, title_to_stem(title))
    assert path.parent == tmp_path.resolve()
    assert path.suffix == ".md"


@pytest.mark.parametrize("stem", ["../x", "a/b", "..", "", "a\x00b", "..\\x", "a..b"])
def test_safe_path_rejects_unsafe_stems(tmp_path: Path, stem):
    with pytest.raises(ValueError):
        safe_path(tmp_path, stem)


def test_safe_path_rejects_symlink_escape(tmp_path: Path):
    outside = tmp_path / "outside.md"
    outside.write_text("x")
    root = tmp_path / "articles"
    root.mkdir()
    (root / "Link.md").symlink_to(outside)
    with pytest.raises(ValueError):
        safe_path(root, "Link")


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=400))
def test_any_title_gives_a_safe_nonempty_stem(tmp_path_factory, title):
    stem = title_to_stem(title)
    assert stem and len(stem.encode()) <= MAX_STEM_BYTES + 1
    assert "/" not in stem and "\\" not in stem and ".." not in stem and "\x00" not in stem
    assert title_to_stem(stem) == stem
    assert title_to_stem(stem_to_title(stem)) == stem or stem.endswith("_")
    root = tmp_path_factory.mktemp("vault")
    assert safe_path(root, stem).parent == root.resolve()


def test_unique_stem():
    assert unique_stem("Topic", set()) == "Topic"
    assert unique_stem("Topic", {"topic"}) == "Topic_2"
    assert unique_stem("Topic", {"Topic", "TOPIC_2", "x"}) == "Topic_3"
