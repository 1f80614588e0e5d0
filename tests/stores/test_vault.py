"""Safety of vault writes: adversarial titles stay inside the vault, stems are stable and
unique, and git holds only the vault's text files."""

import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memvault.markdown.names import title_to_stem
from stores.ledger import Ledger
from stores.vault import Vault
from memvault.stages.normalize import run_normalize
from memvault.stages.wikify import run_wikify
from tests.helpers import stage_ctx

ADVERSARIAL = ["../../etc/passwd", "CON", "con.txt", "x" * 300, "é" * 200, "a/b", "a\\b", "nul\x00byte",
               "\u202eevil\u200f.md", "..", ".", "", "   ", "#^[]|", "C# Tips", "C Tips", "Tabs\tand\nlines"]


def _outside(root: Path, home: Path) -> set[Path]:
    return {p for p in root.rglob("*") if home not in p.parents and p != home}


def test_adversarial_titles_go_through_the_real_write_path_and_stay_inside(tmp_path: Path, home: Path) -> None:
    before = _outside(tmp_path, home)
    ledger = Ledger(home / ".memvault" / "ledger.duckdb")
    vault = Vault(home)
    stems = {}
    try:
        for title in ADVERSARIAL:
            ledger.upsert_bucket(title, "", [0.0], 0)
            stems[title] = ledger.bucket_stem(title)
    finally:
        ledger.close()
    touched = {}
    for title, stem in stems.items():
        path = vault.article_path(stem)
        # An orphan marker makes normalize write the Talk page too.
        vault.write(path, f"# {title}\n\nSome words about it.[^1][^9]\n\n## References\n\n"
                          "[^1]: `conv:12345678` (2026-01-01, pi) — x\n")
        touched[path.stem] = "created"
    run_wikify(stage_ctx(home, touched=touched))
    run_normalize(stage_ctx(home))
    assert _outside(tmp_path, home) == before  # nothing written outside the home
    articles = {p.name for p in (home / "articles").iterdir() if p.suffix == ".md"}
    talk = {p.name for p in (home / "Talk").iterdir() if p.name != "README.md"}
    assert len(set(stems.values())) == len(ADVERSARIAL)  # every title its own file
    assert articles == {f"{s}.md" for s in stems.values()} and talk == articles
    for stem in stems.values():
        assert stem and "/" not in stem and "\\" not in stem and ".." not in stem and "\x00" not in stem
        assert len(stem.encode()) <= 120 + 4 and stem.split(".")[0].upper() not in {"CON", "NUL", "PRN", "AUX"}
        assert not any(ch in stem for ch in "\u202e\u200f\t\n")
    for p in (home / "articles").iterdir():
        assert p.resolve().parent == (home / "articles").resolve()


def test_colliding_titles_get_a_suffix_that_never_changes(home: Path) -> None:
    assert title_to_stem("C# Tips") == title_to_stem("C Tips") == "C_Tips"  # a real collision
    path = home / ".memvault" / "ledger.duckdb"
    ledger = Ledger(path)
    try:
        ledger.upsert_bucket("C# Tips", "", [0.0], 0)
        ledger.upsert_bucket("C Tips", "", [0.0], 0)
        first = (ledger.bucket_stem("C# Tips"), ledger.bucket_stem("C Tips"))
        ledger.upsert_bucket("C# Tips", "updated", [1.0], 3)  # an update keeps the stem
        ledger.upsert_bucket("C Tips 2", "", [0.0], 0)  # a title whose plain stem is the suffixed one
        third = ledger.bucket_stem("C Tips 2")
    finally:
        ledger.close()
    assert first == ("C_Tips", "C_Tips_2") and third == "C_Tips_2_2"
    ledger = Ledger(path)
    try:
        assert (ledger.bucket_stem("C# Tips"), ledger.bucket_stem("C Tips")) == first
        assert ledger.bucket_for_stem("c_tips_2") == "C Tips"
    finally:
        ledger.close()


@given(st.text(max_size=200))
def test_a_stem_is_its_own_stem(title: str) -> None:
    # The vault re-applies title_to_stem to a stem (article_path accepts both spellings).
    stem = title_to_stem(title)
    assert title_to_stem(stem) == stem


def test_vault_refuses_to_write_outside_the_home(home: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        Vault(home).write(tmp_path / "elsewhere.md", "x")
    link = home / "articles" / "Link.md"
    link.symlink_to(tmp_path / "target.md")
    with pytest.raises(ValueError):
        Vault(home).write(link, "x")
    assert not (tmp_path / "target.md").exists()


def test_git_holds_only_vault_text_after_a_real_run(demo_runs) -> None:
    home = demo_runs["home"]
    files = subprocess.run(["git", "ls-files"], cwd=home, capture_output=True, text=True, check=True).stdout.split()
    assert any(f.startswith("articles/") and f.endswith(".md") for f in files)
    allowed = (".md", ".toml", ".gitignore", ".gitkeep")
    assert [f for f in files if not f.endswith(allowed)] == []
    assert not [f for f in files if f.startswith(".memvault/")]
    assert ".memvault/" in (home / ".gitignore").read_text()
    status = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=home, capture_output=True, text=True)
    assert all(line.startswith("!! .memvault") or not line.strip() for line in status.stdout.splitlines())
