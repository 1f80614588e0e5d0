"""How good is the no-model wiki on real conversations? (#25 item 11)

Builds a wiki with `engine = none` from a corpus of real conversations, in two nightly runs
(the second adds the later half of the corpus, so leads and links must follow), and prints
the figures of #25's goals:

* filler titles and headings (greetings, acknowledgements, "Notes");
* escapes the source did not have (backslashes `escape` would not write);
* agent-noise lines in articles, articles mixing scripts;
* articles linking to another article; citations Obsidian can follow (a footnote whose
  wikilink opens an existing heading of a conversation page);
* chunks neither in an article nor listed with a reason (Meta/Waiting.md, parked with a
  reason on a Talk page); `estimated_runs_to_finish` of the last run;
* lint findings per rule on the vault, and on a copy with one defect of each kind planted
  (filler title, needless escapes, agent noise, a wrong lead count, a mixed-script section,
  an article with no links): at least one finding per planted defect.

Corpora (read at run time from where they are, converted in a temporary folder, never copied
into the repository):

* `dev` — what the rules and thresholds were chosen on: every sample of ../shared/formats/
  (Claude Code, Codex, pi — one real session — ChatGPT, claude.ai) and LoCoMo conversations 1–2
  (`locomo_dev.json`, CC BY-NC, evaluation only), each session a claude.ai conversation.
* `report` — what bench/README.md reports: LoCoMo conversations 3–5, plus the same format
  samples (there are no others; they are small).

    .venv/bin/python bench/wiki_quality.py --corpus report [--json] [--keep DIR]
"""

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from datetime import datetime, timedelta
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

FORMATS = ROOT.parent / "shared" / "formats"
LOCOMO = ROOT.parent / "shared" / "eval" / "locomo" / "locomo_dev.json"
SPLITS = {"dev": [0, 1], "report": [2, 3, 4]}
_FOOTNOTE_LINK = re.compile(r"\[\[(Conversations/[^\]#|]+)#([^\]|]+)")


def _locomo_time(raw: str) -> datetime:
    try:
        return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y")
    except ValueError:
        return datetime(2023, 1, 1)


def locomo_export(samples: list[dict[str, Any]], half: int) -> list[dict[str, Any]]:
    """LoCoMo sessions as a claude.ai export (speaker A as the human); ``half`` 0 or 1 picks
    the earlier or later half of each conversation's sessions."""
    out = []
    for sample in samples:
        conv = sample["conversation"]
        keys = sorted((k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1]))
        keys = keys[: len(keys) // 2] if half == 0 else keys[len(keys) // 2:]
        for key in keys:
            start = _locomo_time(conv.get(f"{key}_date_time", ""))
            msgs = []
            for n, turn in enumerate(conv[key]):
                when = (start + timedelta(seconds=30 * n)).isoformat() + "Z"
                sender = "human" if turn["speaker"] == conv["speaker_a"] else "assistant"
                msgs.append({"uuid": f"{sample['sample_id']}-{key}-{n}", "sender": sender, "text": turn["text"],
                             "content": [{"type": "text", "text": turn["text"]}], "created_at": when,
                             "updated_at": when, "attachments": [], "files": []})
            out.append({"uuid": f"locomo-{sample['sample_id']}-{key}", "name": "", "summary": "",
                        "created_at": start.isoformat() + "Z", "updated_at": start.isoformat() + "Z",
                        "chat_messages": msgs})
    return out


def build_corpus(src: Path, corpus: str, half: int, locomo: Path, formats: Path) -> None:
    """Write run ``half``'s share of ``corpus`` into ``src`` (format samples go in the first run)."""
    src.mkdir(parents=True, exist_ok=True)
    if half == 0:
        for path in formats.rglob("*"):
            if path.is_file() and path.suffix in (".jsonl", ".json"):
                dest = src / path.parent.name / path.name
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, dest)
    data = json.loads(locomo.read_text(encoding="utf-8"))
    export = locomo_export([data[i] for i in SPLITS[corpus] if i < len(data)], half)
    (src / f"locomo_{half}").mkdir(exist_ok=True)
    (src / f"locomo_{half}" / "conversations.json").write_text(json.dumps(export), encoding="utf-8")


def followable(home: Path, text: str) -> tuple[int, int]:
    """(citations whose link opens an existing heading of a conversation page, citations)."""
    from memvault.markdown.scan import Doc

    ok = total = 0
    for d in Doc(text).footnote_defs():
        total += 1
        m = _FOOTNOTE_LINK.search(d.content)
        if m:
            page = home / f"{m.group(1)}.md"
            if page.is_file() and re.search(rf"^#+ {re.escape(m.group(2))}\s*$", page.read_text(encoding="utf-8"), re.M):
                ok += 1
    return ok, total


def chunk_accounting(home: Path) -> dict[str, int]:
    """Chunks in articles, listed on Meta/Waiting.md, parked with a reason, and the rest."""
    from memvault.config.settings import load_settings
    from stores.ledger import Ledger

    with Ledger.open(load_settings(home), read_only=True) as ledger:
        con = ledger.con

        def count(sql: str) -> int:
            row = con.execute(sql).fetchone()
            return int(row[0]) if row else 0

        total = count("SELECT count(*) FROM chunks")
        woven = count("SELECT count(DISTINCT chunk_id) FROM synthesized_bucket_chunks")
        parked = count("SELECT count(*) FROM unit_attempts WHERE stage = 'synthesize' AND parked "
                       "AND reason IS NOT NULL AND reason <> ''")
        unassigned = len(ledger.unassigned_chunks())
    waiting_page = home / "Meta" / "Waiting.md"
    listed = len(re.findall(r"^- `conv:", waiting_page.read_text(encoding="utf-8"), re.M)) if waiting_page.is_file() else 0
    return {"chunks": total, "in_articles": woven, "waiting_listed": listed, "parked_with_reason": parked,
            "unassigned": unassigned, "unaccounted": max(0, total - woven - min(listed, unassigned) - parked)}


PLANTS: dict[str, Callable[[str], str]] = {
    "filler-title": lambda t: re.sub(r"^# .*$", "# Thanks", t, count=1, flags=re.M),
    "needless-escape": lambda t: t.replace("\n## ", "\n## Planted\n\nThe release moved to \\*\\*August 26\\*\\* "
                                                    "after the review\\.\n\n## ", 1),
    "agent-noise": lambda t: t.replace("\n## ", "\n## Planted noise\n\nPlease run /login · API Error: 401 "
                                                "OAuth access token has expired.\n\n## ", 1),
    "lead-count": lambda t: re.sub(r"came up in \d+ conversations?", "came up in 12 conversations", t, count=1),
    "mixed-script": lambda t: t.replace("\n## References", "\n## 数据库备份\n\n我们讨论了数据库的备份策略和恢复时间，"
                                                           "每天晚上运行一次完整备份。\n\n## References", 1),
    "no-links": lambda t: re.sub(r"\n## See also\n(?:.*\n)*?(?=\n## |\Z)", "\n", t),
}


def planted_findings(home: Path) -> dict[str, int]:
    """Lint findings of each planted defect's rule, planted one at a time into one article."""
    from memvault.ops.lint import lint_home

    articles = sorted((home / "articles").glob("*.md"))
    if not articles:
        return {}
    target = max(articles, key=lambda p: p.read_text(encoding="utf-8").count("[[") * 1000 + len(p.read_text()))
    original = target.read_text(encoding="utf-8")
    out = {}
    for rule, plant in PLANTS.items():
        before = sum(f.rule == rule and f.file.endswith(target.name) for f in lint_home(home))
        target.write_text(plant(original), encoding="utf-8")
        after = sum(f.rule == rule and f.file.endswith(target.name) for f in lint_home(home))
        target.write_text(original, encoding="utf-8")
        out[rule] = after - before
    return out


def measure(home: Path, report: dict[str, Any]) -> dict[str, Any]:
    from collections import Counter

    from memvault.ops.lint import lint_home

    findings = lint_home(home)
    rules = Counter(f.rule for f in findings)
    articles = sorted((home / "articles").glob("*.md"))
    ok = total = 0
    for path in articles:
        a, b = followable(home, path.read_text(encoding="utf-8"))
        ok, total = ok + a, total + b
    no_links = {f.file for f in findings if f.rule == "no-links"}
    escapes = sum(int(f.message.split()[0]) for f in findings if f.rule == "needless-escape")
    return {
        "articles": len(articles),
        "titles": [next((ln[2:] for ln in p.read_text(encoding="utf-8").splitlines() if ln.startswith("# ")), p.stem)
                   for p in articles],
        "filler_titles": rules["filler-title"], "filler_headings": rules["filler-heading"],
        "escapes_not_in_source": escapes, "noise_lines": rules["agent-noise"],
        "mixed_script_articles": len({f.file for f in findings if f.rule == "mixed-script"}),
        "linked_articles": f"{len(articles) - len(no_links)}/{len(articles)}" if len(articles) > 1 else "n/a",
        "citations_followable": f"{ok}/{total}",
        "lead_count_mismatches": rules["lead-count"],
        "chunk_accounting": chunk_accounting(home),
        "estimated_runs_to_finish": (report.get("backlog") or {}).get("estimated_runs_to_finish"),
        "lint_findings": dict(sorted(rules.items())),
        "planted": planted_findings(home),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", choices=sorted(SPLITS), default="report")
    ap.add_argument("--locomo", type=Path, default=LOCOMO, help="locomo_dev.json (read, never copied)")
    ap.add_argument("--formats", type=Path, default=FORMATS, help="the shared format samples folder")
    ap.add_argument("--runs", type=int, choices=(1, 2), default=2, help="2: the later sessions arrive in a second run")
    ap.add_argument("--keep", type=Path, help="build the home here and keep it (to open in Obsidian)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from memvault.ops.home import init_home
    from tests.stages.plain_run import plain_execute

    tmp = Path(tempfile.mkdtemp(prefix="memvault-wiki-bench-"))
    home = args.keep or tmp / "home"
    try:
        init_home(home)
        os.environ["MEMVAULT_ENGINE"] = "none"
        src = tmp / "corpus"
        report: dict[str, Any] = {}
        for half in range(args.runs):
            build_corpus(src, args.corpus, half if args.runs == 2 else 0, args.locomo, args.formats)
            if args.runs == 1:
                build_corpus(src, args.corpus, 1, args.locomo, args.formats)
            report = plain_execute(str(home), str(src))
        result = {"corpus": args.corpus, "runs": args.runs, **measure(home, report)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(result, indent=1, default=str))
        return
    for key, value in result.items():
        if key == "titles":
            print(f"{key}:")
            for t in value:
                print(f"  - {t}")
        else:
            print(f"{key}: {value}")


if __name__ == "__main__":
    main()
