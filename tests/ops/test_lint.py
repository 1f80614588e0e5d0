"""`memvault lint [--fix] [--json]` on planted problems and on an imported lucien-style vault."""

import json
import subprocess
from pathlib import Path

import git

from memvault.ops.lint import lint_home
from tests.helpers import cli

PLANTED = {
    # file: text — each problem sits on a known line (1-based, front matter included).
    "articles/Planted.md": (
        "---\n"                                        # 1
        "aliases: [Plant]\n"                           # 2
        "---\n"                                        # 3
        "# Planted\n"                                  # 4
        "\n"                                           # 5
        "A lead that cites a missing note.[^9]\n"      # 6  marker without definition
        "\n"                                           # 7
        "## Body\n"                                    # 8
        "\n"                                           # 9
        "Links to [[Nowhere Page]] and [[Other]].\n"   # 10 dangling link
        "\n"                                           # 11
        "# Second Title\n"                             # 12 extra H1
        "\n"                                           # 13
        "[^1]: `conv:11111111` (2026-01-01, x) — a\n"  # 14 never cited; no References section
        "[^1]: `conv:22222222` (2026-01-02, x) — b\n"  # 15 defined twice
    ),
    "articles/Other.md": (
        "# Other\n"                                    # 1
        "\n"                                           # 2
        "## Straight to a section\n"                   # 3
        "\n"                                           # 4
        "No lead paragraph above this one, and a word count over the limit we set.\n"  # 5
    ),
    "articles/Wrong_Name.md": "# Right Name\n\nA lead.\n",                      # 1 bad file name
    "articles/Twin.md": "# Other\n\nSame title as Other.md.\n",                   # duplicate title
    "articles/Fence.md": "# Fence\n\nA lead.\n\n```python\nprint('never closed')\n",  # 5 unclosed fence
    "articles/notes.txt": "not an article\n",
    "articles/drafts/Draft.md": "# Draft\n\nIn a folder.\n",
}


def _plant(home: Path) -> None:
    for rel, text in PLANTED.items():
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_lint_finds_each_planted_problem_on_its_line(home: Path) -> None:
    _plant(home)
    found = {(f.file, f.line, f.rule) for f in lint_home(home, max_words=10)}
    expected = {
        ("articles/Planted.md", 6, "footnote-bijection"),
        ("articles/Planted.md", 10, "dangling-link"),
        ("articles/Planted.md", 12, "multiple-h1"),
        ("articles/Planted.md", 14, "footnote-bijection"),
        ("articles/Planted.md", 15, "footnote-bijection"),
        ("articles/Planted.md", 14, "missing-references"),
        ("articles/Other.md", 1, "missing-lead"),
        ("articles/Other.md", 1, "oversize"),
        ("articles/Planted.md", 1, "oversize"),
        ("articles/Other.md", 1, "duplicate-title"),
        ("articles/Twin.md", 1, "duplicate-title"),
        ("articles/Twin.md", 1, "bad-filename"),
        ("articles/Wrong_Name.md", 1, "bad-filename"),
        ("articles/Fence.md", 5, "unclosed-fence"),
        ("articles/notes.txt", 1, "stray-file"),
        ("articles/drafts/", 1, "nested-folder"),
    }
    assert expected <= found, expected - found
    # Nothing else is reported: a finding no rule above explains would be noise.
    assert found - expected == set(), found - expected


def test_cli_lint_exit_codes_and_json(home: Path) -> None:
    clean = cli("--home", str(home), "lint")
    assert clean.exit_code == 0 and "clean" in clean.output
    _plant(home)
    result = cli("--home", str(home), "lint")
    assert result.exit_code == 1
    assert "articles/Planted.md:10: [error] dangling-link: [[Nowhere Page]] points at no article" in result.output
    data = json.loads(cli("--home", str(home), "lint", "--json").output)
    assert data["problems"] == len(data["findings"]) > 0
    assert set(data["findings"][0]) == {"file", "line", "rule", "message", "fixable"}
    assert cli("--home", str(home), "lint", "--max-words", "0").exit_code == 2
    assert cli("--home", str(home), "lint", "--bogus").exit_code == 2


def test_fix_then_lint_leaves_only_what_needs_a_person(home: Path) -> None:
    _plant(home)
    commits = git.Repo(home).head.commit.hexsha
    fixed = cli("--home", str(home), "lint", "--fix", "--json")
    assert fixed.exit_code == 0, fixed.output
    data = json.loads(fixed.output)
    assert data["problems"] == 0 and data["commit"] and "articles/Planted.md" in data["changed"]
    repo = git.Repo(home)
    assert repo.head.commit.parents[0].hexsha == commits  # exactly one commit
    assert "lint --fix" in repo.head.commit.message
    after = lint_home(home)
    assert after and all(not f.fixable for f in after)
    assert {f.rule for f in after} <= {"dangling-link", "bad-filename", "duplicate-title", "unclosed-fence",
                                       "stray-file", "nested-folder"}
    planted = (home / "articles" / "Planted.md").read_text()
    # Orphans gone (no footnote is left, so no References either); the extra H1 demoted.
    assert "[^" not in planted and "## Second Title" in planted and "## References" not in planted
    talk = (home / "Talk" / "Planted.md").read_text()
    assert "dropped citation marker `[^9]`" in talk and "(run lint-" in talk
    assert "conv:11111111" in talk and "conv:22222222" in talk
    again = cli("--home", str(home), "lint", "--fix", "--json")
    assert again.exit_code == 0 and json.loads(again.output)["commit"] is None
    assert git.Repo(home).head.commit.hexsha == repo.head.commit.hexsha


def test_lucien_vault_lints_and_fixes(lucien_home: Path) -> None:
    result = cli("--home", str(lucien_home), "lint", "--json")
    findings = json.loads(result.output)["findings"]
    assert result.exit_code == 1
    assert [(f["file"], f["line"], f["rule"]) for f in findings] == [
        ("articles/Bread_Hydration.md", 7, "dangling-link")]
    fixed = cli("--home", str(lucien_home), "lint", "--fix")
    assert fixed.exit_code == 0 and "[warning] dangling-link" in fixed.output
    bread = (lucien_home / "articles" / "Bread_Hydration.md").read_text()
    assert "[[Sourdough_Starter|levain]]" in bread and "[[Oven Spring]]" in bread
    assert "[[Bread_Hydration]]" in (lucien_home / "articles" / "Sourdough_Starter.md").read_text()
    assert "Oven Spring" in (lucien_home / "Meta" / "Wanted_Articles.md").read_text()
    # The hand-written Talk page and the lucien citations are untouched.
    assert "1:2:2 feeds" in (lucien_home / "Talk" / "Sourdough_Starter.md").read_text()
    assert "`conv:3f9a2c1d` (2026-02-11, chatgpt)" in (lucien_home / "articles" / "Sourdough_Starter.md").read_text()
    status = subprocess.run(["git", "status", "--porcelain"], cwd=lucien_home, capture_output=True, text=True)
    assert status.stdout == ""


def test_lint_fix_takes_the_writer_lock(home: Path) -> None:
    from memvault.lock import writer_lock

    with writer_lock(home / ".memvault", "test holder", 1):
        result = cli("--home", str(home), "lint", "--fix")
    assert result.exit_code == 1 and "another memvault process" in result.output
