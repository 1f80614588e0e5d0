"""No-model rejections settle: parked with their reason until their input changes.

Real nightly flow runs (Prefect harness, DuckDB, LanceDB, git, MiniLM) over three sample
conversations. A person's edit that cites a conversation memvault does not know makes every
extractive update of that article fail the gate; the same input would fail the same way every
night, so the chunks are parked at once: the next run with nothing new neither retries them
nor commits. Fixing the article (a changed input) unparks them.
"""

import re
from pathlib import Path

import git

from tests.helpers import SAMPLES, copy_subset, run_flow

BAD = "A note from the NAS vendor about this.[^{n}]"
BAD_DEF = "[^{n}]: `conv:deadbeef00` (2026-01-01, pi) — a conversation that was never ingested"


def _edit_by_hand(home: Path, paths: list[Path], message: str) -> None:
    repo = git.Repo(home)
    repo.index.add([str(p.relative_to(home)) for p in paths])
    repo.index.commit(message, author=git.Actor("Sam", "sam@example.org"),
                      committer=git.Actor("Sam", "sam@example.org"))


def _cite_unknown(text: str) -> str:
    """``text`` with one more paragraph (last before References) citing an unknown conversation."""
    n = 1 + max(int(m) for m in re.findall(r"^\[\^(\d+)\]:", text, re.M))
    body, refs = text.split("\n## References\n", 1)
    return body.rstrip("\n") + "\n\n" + BAD.format(n=n) + "\n\n## References\n" + refs.rstrip("\n") + "\n" + \
        BAD_DEF.format(n=n) + "\n"


def _new_session(src: Path) -> None:
    """A second copy of a home-lab session under a new session id: new material for its bucket."""
    original = next((SAMPLES / "claude-code" / "-Users-sam-src-homelab").glob("bae693b9*.jsonl"))
    new_id = "0e0e0e0e-1111-5222-8333-444444444444"
    text = original.read_text().replace("bae693b9-c99b-5609-9432-d79c87eaec22", new_id)
    (src / "claude-code" / "-Users-sam-src-homelab" / f"{new_id}.jsonl").write_text(text)


def test_a_rejection_is_parked_until_its_input_changes(home: Path, tmp_path: Path, prefect) -> None:
    src = copy_subset(tmp_path / "src")
    first = run_flow(home, paths=[str(src)])
    assert first["status"] == "completed" and first["articles_created"]
    articles = sorted((home / "articles").glob("*.md"))
    originals = {p: p.read_text() for p in articles}
    for p in articles:
        p.write_text(_cite_unknown(originals[p]))
    _edit_by_hand(home, articles, "a note from the vendor")
    _new_session(src)

    rejected = run_flow(home, paths=[str(src)])
    synth = rejected["stages"]["synthesize"]
    assert rejected["stages"]["ingest"]["conversations_new"] == 1
    assert synth["rejected"] >= 1 and synth["parked"] >= 1, synth
    reasons = [r for a in rejected["articles_rejected"] for r in a["reasons"]]
    assert any("unknown conversation conv:deadbeef00" in r for r in reasons), reasons
    assert not any("model" in r for r in reasons)  # no model ran, and no reason says one did
    stem = rejected["articles_rejected"][0]["article"]
    talk = home / "Talk" / f"{stem}.md"
    assert "parked: not retried until the article or this topic's material changes" in talk.read_text()
    assert (home / "articles" / f"{stem}.md").read_text() == _cite_unknown(originals[home / "articles" / f"{stem}.md"])
    commits, talk_text = git.Repo(home).head.commit.hexsha, talk.read_text()

    again = run_flow(home, paths=[str(src)])
    synth = again["stages"]["synthesize"]
    assert synth["rejected"] == 0 and synth["buckets"] == 0 and synth["still_parked"] >= 1, synth
    assert again["articles_rejected"] == []
    assert again["stages"]["changelog"]["committed"] is None
    assert git.Repo(home).head.commit.hexsha == commits
    assert talk.read_text() == talk_text

    # The person fixes the article: its input changed, so the parked chunks are tried again.
    fixed = home / "articles" / f"{stem}.md"
    fixed.write_text(originals[fixed])
    _edit_by_hand(home, [fixed], "drop the vendor note")
    retried = run_flow(home, paths=[str(src)])
    synth = retried["stages"]["synthesize"]
    assert synth["unparked"] >= 1 and synth["rejected"] == 0, synth
    assert stem in retried["articles_updated"]
    assert retried["stages"]["changelog"]["committed"] is not None


def test_the_report_never_guesses_runs_left_with_a_question_mark() -> None:
    from memvault.runs.reports import build_report, markdown

    report = build_report("r1", "none", "no model", {"synthesize": {"status": "completed", "seconds": 1.0}}, {}, {},
                          "2026-12-01T00:00:00", "2026-12-01T00:00:01")
    report["backlog"] = {"conversations_left": 0, "chunks_unassigned": 0, "chunks_pending": 4, "buckets_pending": 1,
                         "estimated_runs_to_finish": None}
    text = markdown(report)
    assert "?" not in text.split("**Left for later runs:**")[1]
    assert "no estimate yet: this run made no progress on it" in text
    report["backlog"]["estimated_runs_to_finish"] = 2
    assert "about 2 more run(s) at this run's rate" in markdown(report)
