"""What memory holds is printed as it is: text with `[/etc/…]` or `[red]` is not rich markup.

A note's text went through rich's markup parser in `get` and `timeline`: a closing-tag look-alike
such as `[/etc/tidepool.toml]` crashed the command, and `[red]…[/red]` vanished into colour.
"""

import json
from pathlib import Path

from memvault.ops.note import add_note
from memvault.config.settings import load_settings
from tests.helpers import cli

TEXT = "Config lives in [/etc/tidepool.toml] and colours use [red]bold red[/red] markup."


def test_node_text_with_brackets_prints_verbatim(home: Path, embedder) -> None:
    add_note(load_settings(home), TEXT + "\n2026-12-02", title="[draft] tidepool config", embedder=embedder)
    hits = json.loads(cli("--home", str(home), "search", "tidepool config colours", "--json").output)["hits"]
    message = next(h for h in hits if h["path"].endswith("/m1"))

    got = cli("--home", str(home), "get", message["id"])
    assert got.exit_code == 0 and TEXT in got.output

    timeline = cli("--home", str(home), "timeline", message["id"])
    assert timeline.exit_code == 0 and TEXT in timeline.output
    lines = timeline.output.splitlines()
    assert all(line.startswith(("  /", "→ /")) for line in lines)  # one line per node, line breaks folded

    listed = cli("--home", str(home), "search", "tidepool config colours")
    assert listed.exit_code == 0 and message["path"] in listed.output
    explained = cli("--home", str(home), "recall", "tidepool config colours", "--explain")
    assert explained.exit_code == 0 and "[red]bold red[/red]" in explained.output


def test_recall_explain_says_the_score_in_words_and_numbers(home: Path, embedder) -> None:
    add_note(load_settings(home), TEXT + "\n2026-12-02", title="tidepool config", embedder=embedder)
    hits = json.loads(cli("--home", str(home), "recall", "tidepool config colours", "--json").output)["hits"]
    explained = cli("--home", str(home), "recall", "tidepool config colours", "--explain")

    assert explained.exit_code == 0 and "{'" not in explained.output  # no dict repr
    for h in hits:
        assert f"{h['score']:.4f}  {h['path']}" in explained.output
        assert f"    total {h['explain']['total']:.4f}" in explained.output
    assert "    matched: base " in explained.output
