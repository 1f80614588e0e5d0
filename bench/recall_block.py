"""What `recall`'s block shows (the CLI, MCP and HTTP doors): does it hold the evidence turn, and
does it spend its room on text it already shows?

The home and the questions are bench/prompt_precision.py's: every session of the five LoCoMo dev
conversations (../shared/eval/locomo, read at run time) indexed through the real index code, and
the answerable questions (categories 1–4) of one split (tune: conversations 1–3, report: 4–5).
Each question goes through ``MemoryService.recall`` with the home's settings; the figures:

- ``gold_in_block``: share of questions whose block holds a gold evidence turn (its opening, as
  prompt_precision's ``in_block`` reads it);
- ``gold_dated``: share whose block holds a gold turn with the day its session was held on that
  hit's line (LoCoMo's turns say "last week": the answer to a "when" question needs the day),
  overall and on the temporal questions (category 2);
- ``repeated_hits``: hits whose whole text (40 characters or more) another hit of the same block
  shows — a turn beside the exchange that holds it;
- ``hits_per_block``, ``mean_block_chars``.

    .venv/bin/python bench/recall_block.py --work CACHE/pp [--split report] [--data ...]
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def repeated(texts: list[str]) -> int:
    """Hits whose text (folded, 40+ characters) another hit of the block holds whole."""
    folded = [" ".join(t.split()) for t in texts]
    return sum(1 for i, t in enumerate(folded) if len(t) >= 40 and any(t in u for j, u in enumerate(folded) if j != i))


def session_days(data: list[dict[str, Any]]) -> dict[str, str]:
    """Each turn's text → the day (YYYY-MM-DD) its session was held."""
    from bench.recall_quality import sessions, turn_text

    return {turn_text(t): when.strftime("%Y-%m-%d") for sample in data
            for _, when, _, turns in sessions(sample["conversation"]) if when for t in turns}


def dated(block: str, gold: list[str], days: dict[str, str]) -> bool:
    """A hit of ``block`` shows a gold turn, and its line (the first of the hit) says the turn's day."""
    from memvault.recall.evidence import as_written

    for entry in block.split("\n\n"):
        flat = " ".join(entry.split())
        if any(g in days and as_written(g)[:60] in flat and days[g] in entry.split("\n", 1)[0] for g in gold):
            return True
    return False


def main() -> int:
    from bench.prompt_precision import answerable, build_home, in_block, reading_service

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "eval" / "locomo" / "locomo_dev.json")
    ap.add_argument("--work", type=Path, required=True, help="cache folder outside the repository (home, embeddings)")
    ap.add_argument("--split", choices=("tune", "report"), default="report")
    args = ap.parse_args()
    data = json.loads(args.data.read_text(encoding="utf-8"))
    home = build_home(data, args.work)
    service, embedder = reading_service(home, args.work)
    questions = [(q, gold) for split, q, gold, _ in answerable(data) if split == args.split]
    days = session_days(data)
    temporal = {str(qa["question"]) for sample in data for qa in sample.get("qa", []) if qa.get("category") == 2}
    held = repeats = hits = chars = with_day = 0
    when_held = when_n = 0
    for q, gold in questions:
        answer = service.recall(q)
        held += in_block(answer["block"], gold)
        with_day += dated(answer["block"], gold, days)
        if q in temporal:
            when_n += 1
            when_held += dated(answer["block"], gold, days)
        repeats += repeated([h["text"] for h in answer["hits"]])
        hits += len(answer["hits"])
        chars += len(answer["block"])
    embedder.save()
    n = max(len(questions), 1)
    print(json.dumps({"split": args.split, "questions": len(questions), "gold_in_block": round(held / n, 4),
                      "gold_dated": round(with_day / n, 4), "temporal_questions": when_n,
                      "temporal_gold_dated": round(when_held / max(when_n, 1), 4),
                      "repeated_hits": repeats, "hits_per_block": round(hits / n, 2),
                      "mean_block_chars": round(chars / n)}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
