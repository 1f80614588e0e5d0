"""Benchmark of the model-backed stages on samples/: units per second per stage, model calls
and tokens per new chunk, and the cost of reruns with nothing new; with `--quality`, what a
reader gets instead.

`--quality` prints per engine: articles and their titles, words, citations per article, chunks
that fell back or were rejected or parked (with their reasons), prompt tokens per call, and the
share of article sentences found verbatim in a conversation the article cites. Engines there:
`none`, the scripted fake, and each recorded small-model run in tests/fixtures/replies/
replayed through the fake engine (on the samples it was recorded over, next to `none` on the
same samples).

Engines: `none`, a scripted fake that always answers validly (the call pattern of a model
whose output is usable), and the real mlx engine on the tiny random-weight llama (gibberish:
every unit falls back or is rejected, then retried until parked). Runs the stages without a
Prefect server (task bodies, as tests/stages/plain_run.py does). By hand, not in CI:

    .venv/bin/python bench/synthesis.py [--runs 4] [--json]
    .venv/bin/python bench/synthesis.py --quality [--excerpt 12] [--json] [--with DIR ...]
"""

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

MODEL_STAGES = ("chunk", "cluster", "synthesize")
UNITS = {"chunk": "conversations", "cluster": "chunks", "synthesize": "chunks_synthesized"}


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    stages = report["stages"]
    out: dict[str, Any] = {"calls": 0, "tokens": 0}
    for name in MODEL_STAGES:
        s = stages.get(name, {})
        units, secs = int(s.get(UNITS[name], 0)), float(s.get("seconds", 0.0))
        out[name] = {"units": units, "seconds": round(secs, 3), "units_per_s": round(units / secs, 2) if secs else None,
                     "calls": s.get("calls", 0), "tokens": s.get("tokens", 0)}
        out["calls"] += s.get("calls", 0)
        out["tokens"] += s.get("tokens", 0)
    out["chunks_new"] = stages.get("chunk", {}).get("chunks_new", 0)
    out["rejected"] = len(report["articles_rejected"])
    out["articles"] = len(report["articles_created"]) + len(report["articles_updated"])
    return out


def bench_engine(label: str, engine: Any, runs: int) -> dict[str, Any]:
    from memvault.ops.home import init_home
    from tests.stages.plain_run import plain_execute

    tmp = Path(tempfile.mkdtemp(prefix=f"memvault-bench-{label}-"))
    try:
        home = tmp / "home"
        init_home(home)
        src = tmp / "samples"
        shutil.copytree(ROOT / "samples", src)
        os.environ["MEMVAULT_ENGINE"] = "none"
        results = []
        for _ in range(runs):
            t0 = time.perf_counter()
            report = plain_execute(str(home), str(src), engine=engine)
            row = summarize(report)
            row["run_seconds"] = round(time.perf_counter() - t0, 2)
            results.append(row)
        first = results[0]
        per_chunk = first["calls"] / first["chunks_new"] if first["chunks_new"] else None
        return {"engine": label, "runs": results,
                "calls_per_new_chunk": round(per_chunk, 2) if per_chunk is not None else None,
                "tokens_per_new_chunk": round(first["tokens"] / first["chunks_new"]) if first["chunks_new"] else None,
                "rerun_calls": [r["calls"] for r in results[1:]]}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


_MARKER = re.compile(r"\[\^[^\]]+\]")
_DEF = re.compile(r"^\[\^[^\]]+\]:\s*`conv:([0-9a-f]+)`", re.MULTILINE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _flat(text: str) -> str:
    return " ".join(text.split())


def _sentences(article: str) -> list[str]:
    """Prose sentences of an article: no headings, references, fences or footnote markers."""
    body = article.split("\n## References", 1)[0]
    out, fenced = [], False
    for line in body.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced or not line.strip() or line.startswith("#") or line.startswith("[^"):
            continue
        text = _MARKER.sub("", line).strip().lstrip(">-* ").replace("**", "")
        out += [s.strip() for s in _SENTENCE_END.split(text) if len(s.strip()) >= 20]
    return out


def _traceable(sentence: str, texts: list[str]) -> bool:
    """Found verbatim (whitespace aside; markdown code marks and a closing cut mark ignored)."""
    flat = _flat(sentence).rstrip("…").strip().replace("`", "")
    return any(flat in t for t in texts)


def quality(home: Path, report: dict[str, Any]) -> dict[str, Any]:
    """What a reader gets from one run: the articles, their sources, what was left out and why."""
    from collections import Counter

    from memvault.markdown.gate import word_count
    from memvault.config.settings import load_settings
    from stores.ledger import Ledger

    arts = sorted((home / "articles").glob("*.md"))
    with Ledger.open(load_settings(home), read_only=True) as ledger:
        convs = {cid: _flat(" ".join(m.text for m in ledger.active_thread(cid))).replace("`", "")
                 for cid in ledger.conversation_ids()}
        reasons: dict[str, Counter[str]] = {}
        for stage in MODEL_STAGES:
            for r in ledger.unit_results(stage).values():
                if r.method != "model" and r.reason:
                    reasons.setdefault(f"{stage} {r.method}", Counter())[r.reason.split(":")[0][:90]] += 1
    articles: list[dict[str, Any]] = []
    sentences, traced = 0, 0
    for path in arts:
        text = path.read_text(encoding="utf-8")
        cited = [t for ref in set(_DEF.findall(text)) for cid, t in convs.items() if cid.startswith(ref)]
        found = [_traceable(s, cited) for s in _sentences(text)]
        sentences += len(found)
        traced += sum(found)
        title = next((ln[2:] for ln in text.splitlines() if ln.startswith("# ")), path.stem)
        articles.append({"title": title, "words": word_count(text), "citations": len(set(_DEF.findall(text))),
                         "sentences": len(found), "traceable": sum(found)})
    synth = report["stages"].get("synthesize", {})
    n = len(articles)
    return {"articles": n, "titles": [a["title"] for a in articles],
            "words_per_article": round(sum(a["words"] for a in articles) / n) if n else 0,
            "citations_per_article": round(sum(a["citations"] for a in articles) / n, 1) if n else 0,
            "traceable_share": round(traced / sentences, 2) if sentences else None,
            "sentences": sentences, "parked": synth.get("parked", 0),
            "rejected": [{"article": r["article"], "reasons": r["reasons"]} for r in report["articles_rejected"]],
            "not_by_model": {k: dict(v.most_common(4)) for k, v in reasons.items()},
            "model_calls": (report.get("budget") or {}).get("model_calls", {}), "per_article": articles}


def quality_run(label: str, engine: Any, samples: list[str] | None, excerpt: int,
                extra: list[Path] | None = None) -> dict[str, Any]:
    """One run over samples/ (or the named folders of it), plus the ``extra`` folders, with
    `engine`; its quality figures."""
    from memvault.ops.home import init_home
    from tests.stages.plain_run import plain_execute

    # The label names sample folders ("claude-code/-Users-…"): no slashes in a directory name.
    tmp = Path(tempfile.mkdtemp(prefix="memvault-quality-" + re.sub(r"[^\w.-]+", "_", label)[:40] + "-"))
    try:
        home, src = tmp / "home", tmp / "src" / "samples"
        init_home(home)
        if samples is None:
            shutil.copytree(ROOT / "samples", src)
        else:
            for rel in samples:
                shutil.copytree(ROOT / "samples" / rel, src / rel)
        for folder in extra or []:  # read where it is kept; copied only into this temporary source
            shutil.copytree(folder, tmp / "src" / folder.name)
        os.environ["MEMVAULT_ENGINE"] = "none"
        report = plain_execute(str(home), str(tmp / "src"), engine=engine)
        out = {"engine": label, "samples": (samples or ["all"]) + [str(f) for f in extra or []], **quality(home, report)}
        first = sorted((home / "articles").glob("*.md"))
        if first and excerpt:
            out["excerpt"] = "\n".join(first[0].read_text(encoding="utf-8").splitlines()[:excerpt])
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def quality_main(excerpt: int, as_json: bool, extra: list[Path] | None = None) -> None:
    from memvault.engines import FakeEngine
    from tests.helpers import ScriptedEngine

    rows = [quality_run("none", None, None, excerpt), quality_run("scripted-fake", ScriptedEngine(), None, excerpt)]
    if extra:
        rows.insert(1, quality_run("none", None, None, excerpt, extra))
    for fixture in sorted((ROOT / "tests" / "fixtures" / "replies").glob("*.json")):
        data = json.loads(fixture.read_text(encoding="utf-8"))
        if "samples" not in data or "model_stages" in data:
            # A segmentation recording (bench/chunk_quality.py replays those), or one of a single
            # stage (tests/stages/test_recorded_replay.py replays it after the no-model stages).
            continue
        rows.append(quality_run(f"none on {', '.join(data['samples'])}", None, data["samples"], excerpt))
        replay = FakeEngine([c["reply"] for c in data["calls"]], model=data["model"])
        rows.append(quality_run(f"{fixture.stem} (replayed)", replay, data["samples"], excerpt))
    if as_json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    for r in rows:
        share = f"{r['traceable_share']:.0%}" if r["traceable_share"] is not None else "n/a"
        print(f"\n== {r['engine']} (samples: {', '.join(r['samples'])})")
        print(f"  articles {r['articles']}: {'; '.join(r['titles']) or '-'}")
        print(f"  words/article {r['words_per_article']}  citations/article {r['citations_per_article']}  "
              f"sentences verbatim in a cited conversation {share} of {r['sentences']}")
        print(f"  chunks parked {r['parked']}; articles rejected {len(r['rejected'])}")
        for rej in r["rejected"]:
            print(f"    rejected {rej['article']}: {'; '.join(rej['reasons'])[:160]}")
        for kind, why in r["not_by_model"].items():
            print(f"    {kind}: " + "; ".join(f"{n}× {reason}" for reason, n in why.items()))
        for stage, c in r["model_calls"].items():
            print(f"    {stage}: {c['calls']} calls, {c['prompt_tokens_per_call']} prompt tokens per call, "
                  f"{c['reply_tokens']} reply tokens")
        if r.get("excerpt"):
            print("  --- first article, opening lines ---\n" + "\n".join("  " + ln for ln in r["excerpt"].splitlines()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4, help="runs per engine (the first does the work)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quality", action="store_true", help="the reader's view per engine instead of throughput")
    parser.add_argument("--excerpt", type=int, default=12, help="with --quality: lines of the first article shown")
    parser.add_argument("--with", dest="extra", type=Path, action="append", default=[],
                        help="with --quality: also a `none` run over samples/ plus this folder of transcripts "
                             "(repeatable; e.g. the shared format samples)")
    args = parser.parse_args()
    if args.quality:
        quality_main(args.excerpt, args.json, args.extra)
        return
    from memvault.engines.mlx import MlxEngine
    from tests.helpers import ScriptedEngine
    from tests.tiny_model import build_tiny_llama

    tiny = build_tiny_llama(Path(tempfile.mkdtemp(prefix="memvault-tiny-")))
    mlx = MlxEngine(str(tiny), temperature=0.0, seed=7)
    mlx.load()
    os.environ["MEMVAULT_CHUNK__MAX_OUTPUT_TOKENS"] = "96"
    os.environ["MEMVAULT_CLUSTER__MAX_OUTPUT_TOKENS"] = "96"
    os.environ["MEMVAULT_SYNTHESIZE__MAX_OUTPUT_TOKENS"] = "128"
    out = [bench_engine("none", None, args.runs), bench_engine("scripted-fake", ScriptedEngine(), args.runs),
           bench_engine("mlx-tiny", mlx, args.runs)]
    if args.json:
        print(json.dumps(out, indent=2))
        return
    for e in out:
        print(f"\n== {e['engine']}: {e['calls_per_new_chunk']} calls and {e['tokens_per_new_chunk']} tokens per new "
              f"chunk; reruns with nothing new made {e['rerun_calls']} calls")
        for i, r in enumerate(e["runs"], start=1):
            stages = "  ".join(f"{n} {r[n]['units']}u/{r[n]['seconds']}s={r[n]['units_per_s']}u/s "
                               f"({r[n]['calls']} calls)" for n in MODEL_STAGES)
            print(f"  run {i}: {r['run_seconds']}s  {stages}  articles {r['articles']} rejected {r['rejected']}")


if __name__ == "__main__":
    main()
