"""Prompt-recall precision through the real hook: does the block appear when memory can answer,
hold the evidence, stay away otherwise, and cost little?

The home: every session of the five LoCoMo dev conversations (../shared/eval/locomo, CC BY-NC,
read at run time, never copied) indexed as a dated conversation through the real index code
(``conversation_nodes`` → ``rows_for`` → ``write_index``) into a home made by ``init_home``.

Prompt sets, each split in two — ``tune`` chooses the decision's thresholds, ``report`` is
what the figures are measured on:

- answerable: LoCoMo questions of categories 1–4 with valid gold evidence; tune =
  conversations 1–3, report = conversations 4–5 (category 5 is adversarial: no answer exists);
- unrelated: real prompts written by people, none about these conversations —
  the Koala test set (180 user-written queries gathered from public sources; Apache-2.0,
  github.com/arnav-gudibande/koala-test-set ``koala_test_set.jsonl``), the first human turn of
  Anthropic's HH-RLHF ``harmless-base/test.jsonl.gz`` (crowdworkers' prompts; MIT,
  github.com/anthropics/hh-rlhf; a fixed sample) and the user prompts of the real pi session in
  ../shared/formats/pi (MIT); halves by a hash of the text;
- trivial: acknowledgements, greetings, "continue", emoji, yes/no, slash commands — the cases
  the issue names (no split: the rule is "never").

``--tune`` computes each tune prompt's signals in process (the same ``evaluate``) and prints
the coverage weight and threshold (the top cosine's weight as set) that inject on the fewest
unrelated prompts while injecting on at least ``--min-answerable`` (95 %) of the answerable
ones (bench/prompt_decisions.py weighs whole decisions, and chose the shipped one); the report runs with the thresholds in the home's
settings (the shipped defaults unless ``--set`` overrides one). The report runs the real hook
— ``memvault --home H prompt-recall`` with Claude Code's UserPromptSubmit JSON on stdin —
starting from no daemon, so the first call starts it as a user's would; wall times are the
median of warm calls against the median of ``python -c pass`` measured in the same run.

    .venv/bin/python bench/prompt_precision.py --data ../shared/eval/locomo/locomo_dev.json \\
        --koala CACHE/koala_test_set.jsonl --hh CACHE/harmless-test.jsonl.gz --work CACHE/pp [--tune]

The prompt files are read where they are (fetch them into a cache folder outside the
repository); nothing fetched is committed. ``--embeddings-url URL --embeddings-model NAME`` builds
the home for an OpenAI-compatible embeddings server (bench/embeddings_server.py) instead of the
bundled MiniLM (``--embeddings-model all-MiniLM-L6-v2-static`` alone: the static table), in a
``--work`` folder of its own (bench/prompt_variants.py and
prompt_decisions.py take the same flags).
"""

import argparse
import gzip
import hashlib
import itertools
import json
import os
import random
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EXE = str(Path(sys.executable).with_name("memvault"))
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "MEMVAULT_ENGINE": "none"}
TRIVIAL = ("thanks!", "thank you", "ok", "okay", "👍", "continue", "hi", "hello", "yes", "no", "/clear", "/compact",
           "go on", "sounds good", "lgtm", "yes please", "no thanks", "great, thanks", "👍👍", "ok do it",
           "perfect", "keep going", "/model sonnet", "?", "y")
HH_SAMPLE = 200


def half(text: str) -> str:
    return "tune" if int(hashlib.sha256(text.encode()).hexdigest(), 16) % 2 == 0 else "report"


def unrelated_prompts(koala: Path | None, hh: Path | None, shared: Path) -> list[tuple[str, str]]:
    """``(set name, prompt)`` of every unrelated prompt available."""
    out: list[tuple[str, str]] = []
    if koala and koala.is_file():
        for line in koala.read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append(("koala", str(json.loads(line)["prompt"])))
    if hh and hh.is_file():
        firsts = []
        with gzip.open(hh, "rt", encoding="utf-8") as fh:
            for line in fh:
                chosen = json.loads(line)["chosen"]
                first = chosen.split("\n\nHuman: ", 1)[-1].split("\n\nAssistant:", 1)[0].strip()
                if first:
                    firsts.append(first)
        out += [("hh-rlhf", p) for p in random.Random(7).sample(sorted(set(firsts)), min(HH_SAMPLE, len(set(firsts))))]
    pi = shared / "formats" / "pi" / "pi_session.v1.real.first40.jsonl"
    for line in pi.read_text(encoding="utf-8").splitlines() if pi.is_file() else []:
        msg = json.loads(line).get("message") or {}
        if msg.get("role") == "user":
            text = " ".join(c.get("text", "") for c in msg.get("content") or [] if c.get("type") == "text").strip()
            if text:
                out.append(("pi", text))
    return out


def answerable(data: list[dict[str, Any]]) -> list[tuple[str, str, list[str], list[str]]]:
    """``(split, question, gold turn texts, gold ids)``: conversations 1–3 tune, 4–5 report."""
    from bench.recall_quality import evidence, sessions, turn_text

    out = []
    for n, sample in enumerate(data):
        turns = {str(t["dia_id"]): turn_text(t) for _, _, _, ts in sessions(sample["conversation"]) for t in ts}
        for qa in sample.get("qa", []):
            ev = evidence(qa, set(turns))
            if ev and int(qa.get("category") or 0) in (1, 2, 3, 4):
                out.append(("tune" if n < 3 else "report", str(qa["question"]), [turns[e] for e in ev], ev))
    return out


def build_home(data: list[dict[str, Any]], work: Path, server: tuple[str, str] | None = None) -> Path:
    """The home with every LoCoMo session indexed (built once per work folder); ``server``:
    ``(url, model)`` of an OpenAI-compatible embeddings server the home is set to use (url ""
    for a bundled model by name)."""
    home = work / "home"
    if (home / ".memvault" / "bench-built").is_file():
        return home
    from memvault.markdown.tree import conversation_nodes
    from memvault.ops.home import init_home
    from memvault.config.settings import load_settings
    from bench.recall_quality import home_embedder, sessions, turn_text
    from stores.nodes import NodeIndex
    from memvault.stages.index import rows_for, write_index

    init_home(home)
    if server:  # another embedder (bench README: "Another embedder through [embeddings] url")
        url = f'url = "{server[0]}"\n' if server[0] else ""
        with (home / "memvault.toml").open("a", encoding="utf-8") as fh:
            fh.write(f'\n[embeddings]\n{url}model = "{server[1]}"\n')
    settings = load_settings(home)
    embedder = home_embedder(settings, work / "embeddings.pkl")
    nodes = NodeIndex.open_or_create(settings, embedder=embedder)
    rows = []
    for sample in data:
        name = str(sample.get("sample_id", "conv"))
        for n, date, raw, turns in sessions(sample["conversation"]):
            msgs: list[tuple[str, str, str, datetime | str | None]] = [
                (str(t["dia_id"]), str(t.get("speaker") or "?"), turn_text(t), date) for t in turns]
            doc = f"conv:{name}-s{n}"
            tree = conversation_nodes(doc[5:], f"{name}-s{n}", f"{name} session {n}",
                                      date.strftime("%Y-%m-%d %H:%M") if date else raw, "locomo", msgs)
            rows += rows_for(doc, "conversation", tree, settings.index.context_turns)
    write_index(nodes, embedder, rows, [], settings.index)  # one write: as one nightly run over them all
    embedder.save()
    (home / ".memvault" / "bench-built").write_text("ok", encoding="utf-8")
    return home


def hook(home: Path, prompt: str) -> tuple[str, float]:
    payload = json.dumps({"session_id": "bench-session", "transcript_path": "/nonexistent.jsonl", "cwd": str(home),
                          "hook_event_name": "UserPromptSubmit", "prompt": prompt})
    t0 = time.perf_counter()
    out = subprocess.run([EXE, "--home", str(home), "prompt-recall"], input=payload.encode(), capture_output=True,
                         env=ENV, check=True)
    return out.stdout.decode(), time.perf_counter() - t0


def timed(argv: list[str], stdin: bytes = b"") -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, input=stdin, capture_output=True, env=ENV, check=True)
    return time.perf_counter() - t0


def tune(home: Path, ans: list[Any], unrel: list[Any], min_answerable: float) -> dict[str, Any]:
    """Signals of every tune prompt in process, then the grid of thresholds."""
    from memvault.ops.memory import MemoryService
    from memvault.ops.prompt_recall import evaluate
    from memvault.live.prompt_gate import GateParams, Signals, decide
    from memvault.config.settings import load_settings

    cache = home.parent / "tune-signals-v3.json"  # v3: 5 units weighed, top cosine, dates matched
    if cache.is_file():
        saved = json.loads(cache.read_text(encoding="utf-8"))
        sig_a = [None if s is None else Signals(tuple(s[0]), *s[1:]) for s in saved["a"]]
        sig_u = [None if s is None else Signals(tuple(s[0]), *s[1:]) for s in saved["u"]]
    else:
        service = MemoryService(load_settings(home))
        loose = GateParams(min_evidence=-10.0, min_cos=-1.0)
        sig_a = [evaluate(service, q, params=loose).signals for _, q, _, _ in ans]
        sig_u = [evaluate(service, p, params=loose).signals for _, p in unrel]
        cache.write_text(json.dumps({"a": sig_a, "u": sig_u}), encoding="utf-8")
    best: tuple[float, float, GateParams] | None = None

    def injects(s: Signals | None, p: GateParams) -> bool:  # decide() without its sentences
        return s is not None and s.evidence(p) >= p.min_evidence and s.cos >= p.min_cos and s.margin >= p.min_margin

    # The least unrelated rate among the thresholds that inject at least --min-answerable of
    # the answerable prompts; among those, the most answerable.
    grid = itertools.product([w / 20 for w in range(0, 21)], [t / 100 for t in range(30, 200)], (0.0, 0.25))
    for w, t, cos in grid:
        p = GateParams(w_coverage=w, min_evidence=t, min_cos=cos)
        a = sum(injects(s, p) for s in sig_a) / len(sig_a)
        u = sum(injects(s, p) for s in sig_u) / len(sig_u)
        if a >= min_answerable and (best is None or (-u, a) > (-best[1], best[0])):
            best = (a, u, p)
    assert best is not None
    return {"tune_answerable": len(sig_a), "tune_unrelated": len(sig_u), "injected_answerable": round(best[0], 4),
            "injected_unrelated": round(best[1], 4), "params": best[2]._asdict()}


def in_block(block: str, gold: list[str]) -> bool:
    from memvault.recall.evidence import as_written

    flat = " ".join(block.split())
    return any(as_written(g)[:60] in flat for g in gold)


def report(home: Path, ans: list[Any], unrel: list[Any], reps: int) -> dict[str, Any]:
    from memvault.live import hookd_client

    subprocess.run([EXE, "--home", str(home), "prompt-recall"], input=b"{}", env=ENV, check=True)  # nothing started yet
    first, first_s = hook(home, "what did Caroline research about adoption?")  # starts the daemon
    out: dict[str, Any] = {"first_call_s": round(first_s, 3)}
    blocks = [hook(home, q)[0] for _, q, _, _ in ans]
    injected = [b for b in blocks if b.strip()]
    out["answerable"] = len(ans)
    out["injected_answerable"] = round(len(injected) / len(ans), 4)
    out["evidence_in_block"] = round(sum(in_block(b, g) for b, (_, _, g, _) in zip(blocks, ans)) / len(ans), 4)
    out["evidence_in_block_when_injected"] = round(
        sum(in_block(b, g) for b, (_, _, g, _) in zip(blocks, ans) if b.strip()) / max(len(injected), 1), 4)
    ublocks = [hook(home, p)[0] for _, p in unrel]
    out["unrelated"] = len(unrel)
    out["injected_unrelated"] = round(sum(1 for b in ublocks if b.strip()) / len(unrel), 4)
    out["unrelated_injected_examples"] = [p[:80] for (_, p), b in zip(unrel, ublocks) if b.strip()][:5]
    tblocks = [hook(home, p)[0] for p in TRIVIAL]
    out["trivial"] = len(TRIVIAL)
    out["injected_trivial"] = sum(1 for b in tblocks if b.strip())
    sizes = [len(b.rstrip("\n")) for b in [*blocks, *ublocks] if b.strip()]
    out["mean_chars_injected"] = round(statistics.mean(sizes), 1) if sizes else 0
    out["max_chars_injected"] = max(sizes, default=0)
    # Wall time: warm hook calls interleaved with `python -c pass`, medians of each.
    passes, recalls, briefs = [], [], []
    qs = [q for _, q, _, _ in ans]
    for i in range(reps):
        passes.append(timed([sys.executable, "-c", "pass"]))
        recalls.append(hook(home, qs[i % len(qs)])[1])
        briefs.append(timed([EXE, "--home", str(home), "index-brief"]))
    base = statistics.median(passes)
    out.update({"pass_ms": round(base * 1000, 1), "prompt_recall_ms": round(statistics.median(recalls) * 1000, 1),
                "index_brief_ms": round(statistics.median(briefs) * 1000, 1),
                "prompt_recall_ratio": round(statistics.median(recalls) / base, 2),
                "index_brief_ratio": round(statistics.median(briefs) / base, 2)})
    out["daemon"] = hookd_client.status(home)
    return out


def source_args(ap: argparse.ArgumentParser) -> None:
    """``--data``, ``--koala``, ``--hh`` (where the sets are read) and ``--work`` (the cache)."""
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "eval" / "locomo" / "locomo_dev.json")
    ap.add_argument("--koala", type=Path, help="koala_test_set.jsonl (github.com/arnav-gudibande/koala-test-set)")
    ap.add_argument("--hh", type=Path, help="harmless-base/test.jsonl.gz (github.com/anthropics/hh-rlhf)")
    ap.add_argument("--work", type=Path, required=True, help="cache folder outside the repository (home, embeddings)")
    ap.add_argument("--embeddings-url", help="an OpenAI-compatible embeddings server the home uses instead of MiniLM "
                    "(bench/embeddings_server.py); a --work folder is built for one embedder")
    ap.add_argument("--embeddings-model", default="", help="the model name sent to --embeddings-url; without it, "
                    "a bundled embedder's name (all-MiniLM-L6-v2-static)")


def server_of(args: argparse.Namespace) -> tuple[str, str] | None:
    """``(url or "", model)`` of the embedder the home is set to, or None for the default."""
    return (args.embeddings_url or "", args.embeddings_model) if args.embeddings_url or args.embeddings_model else None


def reading_service(home: Path, work: Path) -> tuple[Any, Any]:
    """``(service, embedder)``: a MemoryService over ``home`` whose query vectors are cached in
    ``work`` (``embedder.save()`` keeps them), that reads each conversation's turns once and
    logs no access (the bench reads, it does not use)."""
    from memvault.config.settings import load_settings
    from memvault.ops.memory import MemoryService
    from bench.recall_quality import home_embedder

    settings = load_settings(home)
    embedder = home_embedder(settings, work / "queries.pkl")
    service = MemoryService(settings, embedder)
    service._log_access = lambda ids: None  # type: ignore[method-assign]
    docs: dict[str, Any] = {}
    read_doc = service.nodes.doc_nodes

    def doc_nodes(doc: str) -> Any:
        if doc not in docs:
            docs[doc] = read_doc(doc)
        return docs[doc]

    service.nodes.doc_nodes = doc_nodes  # type: ignore[method-assign]
    return service, embedder


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source_args(ap)
    ap.add_argument("--tune", action="store_true", help="choose the thresholds on the tune split")
    ap.add_argument("--min-answerable", type=float, default=0.95, help="--tune: least share of answerable prompts injected")
    ap.add_argument("--limit", type=int, default=0, help="at most this many answerable prompts per split (0: all)")
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()
    data = json.loads(args.data.read_text(encoding="utf-8"))
    args.work.mkdir(parents=True, exist_ok=True)
    home = build_home(data, args.work, server_of(args))
    unrel = unrelated_prompts(args.koala, args.hh, args.data.resolve().parents[2])
    sets = {"source_counts": {k: sum(1 for s, _ in unrel if s == k) for k in ("koala", "hh-rlhf", "pi")}}
    ans = answerable(data)
    split = "tune" if args.tune else "report"
    a = [x for x in ans if x[0] == split]
    if args.limit:
        a = random.Random(3).sample(a, min(args.limit, len(a)))
    u = [x for x in unrel if half(x[1]) == split]
    result = {**sets, "split": split, **(tune(home, a, u, args.min_answerable) if args.tune else report(home, a, u, args.reps))}
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
