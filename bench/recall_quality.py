"""Recall quality on LoCoMo-style data: turn R@5/10/25 and session R@2/5.

Each session of a conversation is ingested as a dated conversation and indexed through the
real index code (``conversation_nodes`` → ``rows_for`` → ``write_index`` into a LanceDB
``NodeIndex`` in a temporary directory, one index per conversation since every question is
asked against its own conversation). Questions go through the real recall path: each
question's candidates come from ``MemoryService._candidates`` (vector top-K ∪ full-text top-K,
with every node they can lift) and are scored by ``score_candidates`` (propagation, priors) —
checked on capture to rank exactly as ``MemoryService._scored``. The captured candidates can
be kept (``--cases``), so scoring variants (``--variants``, ``--sweep``, ``--ablate``) are
measured without re-indexing.
The scored list is reduced to message nodes (one per turn, ``ref`` = dia_id): a parent or
neighbour can lift a turn through propagation, but a large node never stands for the turns
inside it.

In the same run, for comparison: ``vector`` (the index's cosine ranking of message nodes),
``fulltext`` (the index's BM25 ranking of message nodes) and ``baseline_rrf`` (plain BM25 —
k1 1.2, b 0.75, lowercase alphanumeric tokens — and MiniLM cosine over the raw turns
``"<speaker>: <text>"``, fused by RRF with k = 60), as defined in ../shared/eval/README.md.

    .venv/bin/python bench/recall_quality.py --data ../shared/eval/locomo/locomo_dev.json --json

``--set embeddings.url=URL --set embeddings.model=NAME`` indexes and asks through the product's
HTTP embedder instead (any OpenAI-compatible server; bench/embeddings_server.py serves a
sentence-transformers folder); ``baseline_rrf`` then uses that model's cosine too.

The data is read at run time and never copied (its licence forbids shipping it).
"""

import argparse
import hashlib
import json
import math
import os
import pickle
import re
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memvault.embeddings import INT8_NAME, MODEL_DIMS, MODEL_NAME, STATIC_NAME  # noqa: E402
from memvault.embeddings.base import Embedder  # noqa: E402
from memvault.embeddings.minilm import MiniLMEmbedder  # noqa: E402
from memvault.embeddings.select import embedder_for  # noqa: E402
from memvault.markdown.tree import conversation_nodes  # noqa: E402
from memvault.recall.scoring import Candidate, ScoringWeights  # noqa: E402
from memvault.ops.memory import MemoryService  # noqa: E402
from memvault.config.settings import EmbeddingSettings, Settings, load_settings  # noqa: E402
from stores.nodes import NodeIndex  # noqa: E402
from memvault.stages.index import rows_for, write_index  # noqa: E402

from bench.fusion_variants import BenchWeights, fusion_variants  # noqa: E402
from bench.gather_variants import fourth_round, gather_variants, sentence_round, third_round  # noqa: E402
from bench.recall_metrics import FIGURES, Tally, loo_report, sweep_report  # noqa: E402
from bench.scoring_variants import score_variants  # noqa: E402

MODES = ("full", "vector", "fulltext", "baseline_rrf")
# --ablate: the full path again with scoring weights changed (same candidates, same index) …
ABLATIONS: dict[str, dict[str, Any]] = {
    "full-no_sibling_lift": {"sibling_damping": 0.0},
    "full-no_child_lift": {"child_damping": 0.0},
    "full-no_structural_lift": {"sibling_damping": 0.0, "child_damping": 0.0, "parent_damping": 0.0},
    "full-no_similar_lift": {"neighbour_damping": 0.0},
    "full-no_reply_lift": {"reply_damping": 0.0},
    "full-cos_only": {"w_cos": 1.0, "w_lex": 0.0, "w_rrf": 0.0},
    "full-rrf_heavy": {"w_cos": 0.35, "w_lex": 0.20, "w_rrf": 0.45},
}
RAW_K = 60  # list length asked of the single retrievers (covers R@25 after dropping non-turns)
_TOKEN = re.compile(r"[a-z0-9]+")
_DIA = re.compile(r"^D(\d+):(\d+)$")


class CachedEmbedder(MiniLMEmbedder):
    """The real MiniLM embedder as the product's default names it (int8 or fp32; or, with
    ``model_file``, a variant graph of it: see bench/embedding.py); a text is embedded once per
    run (or once per cache file). fp32 vectors are kept under the text's hash, int8 ones under
    a prefixed one, so a cache file made before int8 became the default stays valid."""

    def __init__(self, cache_file: Path | None = None, model_file: Path | None = None,
                 inner: Embedder | None = None, quantized: bool | None = None) -> None:
        """``inner``: another embedder whose vectors are cached instead (``--embedder``);
        ``quantized``: int8 or fp32 MiniLM (default: the product's default embedder;
        MEMVAULT_BENCH_FP32=1 asks for fp32, to compare)."""
        if quantized is None:
            quantized = model_file is None and inner is None and EmbeddingSettings().model == INT8_NAME \
                and not os.environ.get("MEMVAULT_BENCH_FP32")
        super().__init__(model_file=model_file, quantized=quantized)
        self.key_prefix = "int8\x1f" if quantized else ""
        self.inner = inner
        if inner is not None:
            self.name, self.dim = inner.name, inner.dim
        self.cache_file = cache_file
        self.cache: dict[str, np.ndarray] = {}
        if cache_file and cache_file.is_file():
            self.cache = pickle.loads(cache_file.read_bytes())
        self.computed = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        keys = [hashlib.sha1((self.key_prefix + t).encode()).hexdigest() for t in texts]
        todo = sorted({k: t for k, t in zip(keys, texts) if k not in self.cache}.items())
        if todo:
            texts = [t for _, t in todo]
            vecs = self.inner.embed(texts) if self.inner is not None else super().embed(texts)
            self.computed += len(todo)
            for (k, _), v in zip(todo, vecs):
                self.cache[k] = v
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.cache[k] for k in keys]).astype(np.float32)

    def save(self) -> None:
        if self.cache_file:
            self.cache_file.write_bytes(pickle.dumps(self.cache))


def home_embedder(settings: Any, cache_file: Path | None) -> CachedEmbedder:
    """The embedder ``settings`` name, its vectors kept in ``cache_file``: the bundled MiniLM
    (int8, or fp32 with MEMVAULT_BENCH_FP32=1), or the static table or an embeddings server
    (``[embeddings] url``) cached in front of the product's own embedder for it."""
    from memvault.embeddings.base import STATIC_NAME
    from memvault.embeddings.select import embedder_for

    other = settings.embeddings.url or settings.embeddings.model == STATIC_NAME
    return CachedEmbedder(cache_file, inner=embedder_for(settings) if other else None)


# --- data ---------------------------------------------------------------------------------


def parse_date(text: str | None) -> datetime | None:
    """``"1:56 pm on 8 May, 2023"`` → datetime; None when the text has another shape."""
    if not text:
        return None
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%d %B, %Y", "%d %B %Y"):
        try:
            return datetime.strptime(" ".join(text.split()), fmt)
        except ValueError:
            continue
    return None


def sessions(conv: dict[str, Any]) -> list[tuple[int, datetime | None, str | None, list[dict[str, Any]]]]:
    """(number, date, date text, turns) of every session that has turns, in order."""
    out = []
    for key, turns in conv.items():
        m = re.fullmatch(r"session_(\d+)", key)
        if m and isinstance(turns, list) and turns:
            n = int(m.group(1))
            raw = conv.get(f"session_{n}_date_time")
            out.append((n, parse_date(raw), raw, turns))
    return sorted(out, key=lambda s: s[0])


def turn_text(turn: dict[str, Any]) -> str:
    text = str(turn.get("text") or "")
    if turn.get("blip_caption"):
        text += f" [shared an image: {turn['blip_caption']}]"
    return text


def evidence(qa: dict[str, Any], turn_ids: set[str]) -> list[str]:
    """Valid evidence ids: split on ``[;\\s]+``, drop malformed ids and ids not in the conversation."""
    out: list[str] = []
    for item in qa.get("evidence") or []:
        for part in re.split(r"[;\s]+", str(item)):
            if _DIA.match(part) and part in turn_ids and part not in out:
                out.append(part)
    return out


# --- baseline: plain BM25 + MiniLM, RRF -----------------------------------------------------


class BM25:
    """Okapi BM25 (k1 1.2, b 0.75) over lowercase alphanumeric tokens."""

    def __init__(self, docs: list[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.tfs = [Counter(_TOKEN.findall(d.lower())) for d in docs]
        self.lens = np.array([sum(tf.values()) for tf in self.tfs], dtype=float)
        self.avg = float(self.lens.mean()) if len(docs) else 0.0
        df: Counter[str] = Counter()
        for tf in self.tfs:
            df.update(tf.keys())
        n = len(docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(len(self.tfs))
        for term in set(_TOKEN.findall(query.lower())):
            idf = self.idf.get(term)
            if idf is None:
                continue
            for i, tf in enumerate(self.tfs):
                f = tf.get(term)
                if f:
                    out[i] += idf * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * self.lens[i] / self.avg))
        return out


def rrf(rankings: list[list[int]], k: int = 60) -> list[int]:
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + 1 / (k + rank)
    return sorted(fused, key=lambda i: -fused[i])


# --- one conversation ---------------------------------------------------------------------


def index_conversation(sample: dict[str, Any], embedder: CachedEmbedder, settings: Settings) -> NodeIndex:
    """Each session is one dated conversation, indexed by the real index stage code, in order
    (one write per session, as successive nightly runs would)."""
    nodes = NodeIndex.open_or_create(settings, embedder=embedder)
    name = str(sample.get("sample_id", "conv"))
    for n, date, raw, turns in sessions(sample["conversation"]):
        msgs: list[tuple[str, str, str, datetime | str | None]] = [
            (str(t["dia_id"]), str(t.get("speaker") or "?"), turn_text(t), date) for t in turns]
        doc = f"conv:{name}-s{n}"
        title = f"{name} session {n}"
        tree = conversation_nodes(doc[5:], f"s{n}", title, date.strftime("%Y-%m-%d %H:%M") if date else raw,
                                  "locomo", msgs)
        write_index(nodes, embedder, rows_for(doc, "conversation", tree, settings.index.context_turns), [], settings.index)
    return nodes


def turn_ranking(rows: list[dict[str, Any]]) -> list[str]:
    """dia_ids of message nodes in ``rows`` order, each once."""
    out: list[str] = []
    for r in rows:
        if r.get("kind") == "message" and r.get("ref") and r["ref"] not in out:
            out.append(r["ref"])
    return out


@dataclass
class Case:
    """One question with everything recall scoring sees: the candidates of
    ``MemoryService._candidates`` and every node they can lift (vectors dropped: scoring does
    not read them), so variants are scored without the index; plus the other modes' rankings."""

    question: str
    category: int
    gold: list[str]
    hits: list[Candidate]
    lifted: dict[str, Candidate]
    modes: dict[str, list[str]]  # vector, fulltext, baseline_rrf: turn rankings


@dataclass
class ConversationCases:
    cases: list[Case]
    nodes: dict[str, tuple[str, str | None]]  # id -> (kind, ref): what turn_ranking reads


def _liftable(c: Candidate) -> list[str]:
    return [i for i in [c.parent, c.reply, *(n for n, _ in c.similar), *c.children, *c.siblings] if i]


def capture_conversation(sample: dict[str, Any], embedder: CachedEmbedder, overrides: dict[str, Any],
                         check: bool = True) -> ConversationCases:
    """Index one conversation and gather every question's candidates through the real recall
    path. ``check``: the candidates scored with the service's weights must rank exactly as
    ``MemoryService._scored`` does (the cached path is the recall path)."""
    conv = sample["conversation"]
    all_turns = [t for _, _, _, turns in sessions(conv) for t in turns]
    turn_ids = {str(t["dia_id"]) for t in all_turns}
    questions = [(str(qa["question"]), int(qa.get("category") or 0), ev) for qa in sample.get("qa", [])
                 if (ev := evidence(qa, turn_ids))]
    out = ConversationCases([], {})
    with tempfile.TemporaryDirectory(prefix="mv-rq-") as tmp:
        index = {**overrides.get("index", {}), "uri": str(Path(tmp) / "nodes.lance")}
        settings = load_settings(Path(tmp), **{**overrides, "index": index})
        index_conversation(sample, embedder, settings)
        service = MemoryService(settings, embedder)
        raw_ids = [str(t["dia_id"]) for t in all_turns]
        raw_text = [f"{t.get('speaker')}: {t.get('text')}" for t in all_turns]
        bm25 = BM25(raw_text)
        raw_vecs = embedder.embed(raw_text)
        embedder.save()
        for question, category, gold in questions:
            cands, rows, lookup = service._candidates(question, settings.recall.top_k)
            wanted = sorted({i for c in cands for i in _liftable(c)} - {c.id for c in cands})
            lifted = dict(lookup(wanted))
            if check:
                scored, s_rows = service._scored(question, settings.recall.top_k)
                expected = turn_ranking([s_rows[s.id] for s in scored])
            for c in [*cands, *lifted.values()]:
                c.vector = None
                out.nodes[c.id] = (rows[c.id]["kind"], rows[c.id].get("ref"))
            case = Case(question, category, gold, cands, lifted, {})
            if check:
                got = rank_case(case, out.nodes, service.weights())
                assert got == expected, f"cached scoring differs from the recall path on {question!r}"
            qv = embedder.embed_one(question)
            # Each half of recall's own search alone, long enough to hold RAW_K turns once the
            # other node kinds are dropped.
            vector_hits, text_hits = service.nodes.recall_search(qv, question, RAW_K * 3)
            case.modes["vector"] = turn_ranking(vector_hits)
            case.modes["fulltext"] = turn_ranking(text_hits)
            lex = bm25.scores(question)
            lex_rank = [int(i) for i in np.argsort(-lex, kind="stable") if lex[i] > 0]
            vec_rank = [int(i) for i in np.argsort(-(raw_vecs @ qv), kind="stable")]
            case.modes["baseline_rrf"] = [raw_ids[i] for i in rrf([lex_rank, vec_rank])]
            out.cases.append(case)
    return out


def cut_candidates(hits: list[Candidate], top_k: int | None,
                   hop_k: int | None = None) -> tuple[list[Candidate], dict[str, Candidate]]:
    """The candidates ``MemoryService._candidates`` returns with ``recall.top_k`` = ``top_k``
    and ``recall.hop_k`` = ``hop_k``, from those captured with larger ones (None: as captured):
    each list cut to its first ``top_k`` (the second hop's to ``hop_k``). A full-text hit keeps
    its cosine (recall computes it from the vector). A node past every cut is no hit, but can
    still be lifted: it is returned as the lookup would read it (no scores, no kin). Cut to a
    shorter ``hop_k`` the second hop is exactly recall's; with ``top_k`` cut it stays the one
    searched at the captured depth (its terms' rarity counted over the deeper lists)."""
    kept, dropped = [], {}
    for c in hits:
        in_vector = c.vector_rank is not None and (top_k is None or c.vector_rank <= top_k)
        in_text = c.fts_rank is not None and (top_k is None or c.fts_rank <= top_k)
        in_hop = c.hop_rank is not None and (hop_k is None or c.hop_rank <= hop_k)
        if in_vector or in_text or in_hop:
            kept.append(replace(c, vector_rank=c.vector_rank if in_vector else None,
                                fts_rank=c.fts_rank if in_text else None, lexical=c.lexical if in_text else None,
                                hop_rank=c.hop_rank if in_hop else None))
        else:
            dropped[c.id] = replace(c, cos=None, lexical=None, vector_rank=None, fts_rank=None, hop_rank=None,
                                    children=[], siblings=[])
    return kept, dropped


def rank_case(case: Case, nodes: dict[str, tuple[str, str | None]], weights: ScoringWeights) -> list[str]:
    """The turns of one case in the order recall scoring with ``weights`` ranks them (a
    ``BenchWeights`` with ``top_k`` set: on that many candidates per list)."""
    top_k = weights.top_k if isinstance(weights, BenchWeights) else None
    hop_k = weights.hop_k if isinstance(weights, BenchWeights) else None
    hits, store = case.hits, case.lifted
    if top_k is not None or hop_k is not None:
        hits, dropped = cut_candidates(case.hits, top_k, hop_k)
        store = {**case.lifted, **dropped}
    scored = score_variants(hits, lambda ids: {i: store[i] for i in ids if i in store},
                              weights, datetime.now(timezone.utc), query=case.question)
    return turn_ranking([{"kind": nodes[s.id][0], "ref": nodes[s.id][1]} for s in scored])


def score_conversation(conv: ConversationCases, tallies: dict[str, Tally], variants: dict[str, ScoringWeights],
                       memo: dict[str, Tally] | None = None) -> None:
    """Every mode and variant over one conversation's cases; ``memo`` (weights → tally, see
    ``--scores``) holds variants already scored on these cases by this scoring code."""
    for case in conv.cases:
        for mode, ranked in case.modes.items():
            tallies.setdefault(mode, Tally()).add(ranked, case.gold, case.category)
    for name, weights in variants.items():
        key = weights.model_dump_json()
        if memo is not None and key in memo:
            tallies[name] = memo[key]
            continue
        tally = tallies[name] = Tally()
        for case in conv.cases:
            tally.add(rank_case(case, conv.nodes, weights), case.gold, case.category)
        if memo is not None:
            memo[key] = tally


def scoring_code_hash() -> str:
    """What a memoised score depends on besides the weights and the cases: the scoring code."""
    recall = ROOT / "memvault" / "recall"
    files = [recall / "scoring.py", recall / "query.py", recall / "gather.py", ROOT / "bench" / "scoring_variants.py"]
    return hashlib.sha1(b"".join(f.read_bytes() for f in files)).hexdigest()


def load_cases(args: argparse.Namespace, data: list[dict[str, Any]], overrides: dict[str, Any],
               embedder: CachedEmbedder) -> dict[str, ConversationCases]:
    """Every conversation's cases: from ``--cases`` when it holds this data and these settings,
    else captured through the index (and written to ``--cases``)."""
    key = {"data": hashlib.sha1(json.dumps(data, sort_keys=True).encode()).hexdigest(), "overrides": overrides,
           "model_file": str(args.model_file or ""),
           **({"static_table": str(args.static_table)} if args.static_table else {})}
    if args.cases and args.cases.is_file():
        stored = pickle.loads(args.cases.read_bytes())
        if stored["key"] == key:
            conversations: dict[str, ConversationCases] = stored["conversations"]
            return conversations
        print(f"{args.cases} holds other data or settings: capturing again", file=sys.stderr)
    started = time.perf_counter()
    out: dict[str, ConversationCases] = {}
    for sample in data:
        embedder.save()  # before each conversation: a failed capture keeps what was embedded
        out[str(sample.get("sample_id"))] = capture_conversation(sample, embedder, overrides)
        print(f"[{time.perf_counter() - started:6.1f}s] {sample.get('sample_id')}: captured", file=sys.stderr)
    embedder.save()
    if args.cases:
        args.cases.write_bytes(pickle.dumps({"key": key, "conversations": out}))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, type=Path, help="LoCoMo-schema JSON file (a list of conversations)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--limit-conversations", type=int, default=None, help="only the first N conversations")
    ap.add_argument("--ablate", action="store_true", help="also score the full path with single recall settings changed")
    ap.add_argument("--variants", nargs="?", const="", default=None, metavar="FAMILY,...",
                    help="also score the fusion variants of bench/fusion_variants.py (every family, or those whose "
                         "names contain one of FAMILY,...) and report each family left one conversation out")
    ap.add_argument("--scores", type=Path, default=None,
                    help="pickle file keeping each variant's figures on --cases between runs (same scoring code only)")
    ap.add_argument("--categories", action="store_true", help="also print the figures of each LoCoMo category")
    ap.add_argument("--cache", type=Path, default=None, help="pickle file keeping embeddings between runs")
    ap.add_argument("--cases", type=Path, default=None,
                    help="pickle file keeping every question's candidates between runs (scoring changes need no index)")
    ap.add_argument("--model-file", type=Path, default=None,
                    help="embed with this ONNX graph instead of the product's export (a variant from bench/embedding.py --keep)")
    ap.add_argument("--embedder", choices=sorted(MODEL_DIMS), default=EmbeddingSettings().model,
                    help="the embeddings.model to index and query with (keep a --cache file per embedder)")
    ap.add_argument("--static-table", type=Path, default=None,
                    help="with --embedder all-MiniLM-L6-v2-static: embed with this table (a variant written by "
                         "bench/static_variants.py) instead of the distilled one; its columns set the index dimension")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                    help="override a setting for the whole run, e.g. --set recall.top_k=80")
    ap.add_argument("--sweep", default=None, metavar="WEIGHT=V1,V2,...",
                    help="score each value of one recall weight (same index and candidates) and report "
                         "turn R@10 per conversation and left-one-conversation-out, e.g. --sweep reply_damping=0,0.5,0.8")
    args = ap.parse_args(argv)
    sweep = None
    if args.sweep:
        name, _, values = args.sweep.partition("=")
        sweep = (name.removeprefix("recall."), [float(v) for v in values.split(",")])

    overrides: dict[str, dict[str, Any]] = {}
    for item in args.set:
        key, _, value = item.partition("=")
        section, _, field = key.partition(".")
        overrides.setdefault(section, {})[field] = json.loads(value) if value[:1] in "-0123456789[{tf" else value
    inner: Embedder | None = None
    if args.static_table:
        from bench import static_word_rows

        if args.embedder != STATIC_NAME:
            ap.error("--static-table needs --embedder " + STATIC_NAME)
        # A table of bench/static_words.py may hold word rows (static_head.py swaps in its head here).
        inner = static_word_rows.WordStaticEmbedder(table_file=args.static_table)
        # A variant may keep another number of columns: the index of this run takes its width.
        inner.dim = MODEL_DIMS[STATIC_NAME] = int(np.load(args.static_table, mmap_mode="r").shape[1])
    if args.embedder != EmbeddingSettings().model:
        overrides.setdefault("embeddings", {})["model"] = args.embedder
        if inner is None and args.embedder not in (MODEL_NAME, INT8_NAME):  # MiniLM's two: CachedEmbedder itself
            with tempfile.TemporaryDirectory(prefix="mv-rq-") as tmp:
                inner = embedder_for(load_settings(Path(tmp), **overrides))
    if inner is None and overrides.get("embeddings", {}).get("url"):  # the user's own embedder (a server)
        with tempfile.TemporaryDirectory(prefix="mv-rq-") as tmp:
            inner = embedder_for(load_settings(Path(tmp), **overrides))
    data = json.loads(args.data.read_text(encoding="utf-8"))
    data = data[: args.limit_conversations] if args.limit_conversations else data
    minilm = inner is None and args.model_file is None
    embedder = CachedEmbedder(args.cache, args.model_file, inner, quantized=minilm and args.embedder == INT8_NAME)
    started = time.perf_counter()
    conversations = load_cases(args, data, overrides, embedder)
    with tempfile.TemporaryDirectory(prefix="mv-rq-") as tmp:
        base = MemoryService(load_settings(Path(tmp), **overrides), embedder).weights()
    variants = {"full": base}
    if args.ablate:
        variants.update({name: base.model_copy(update=change) for name, change in ABLATIONS.items()})
    if sweep:
        variants.update({f"{sweep[0]}={v:g}": base.model_copy(update={sweep[0]: v}) for v in sweep[1]})
    families: dict[str, list[str]] = {}
    if args.variants is not None:
        wanted = [w.strip() for w in args.variants.split(",") if w.strip()]
        for family, members in {**fusion_variants(base), **gather_variants(base), **third_round(base), **fourth_round(base),
                               **sentence_round(base)}.items():
            if wanted and not any(w in family for w in wanted):
                continue
            variants.update(members)
            families[family] = list(members)
        families["every variant"] = [n for f in families.values() for n in f]
    tallies: dict[str, Tally] = {}
    per_conversation: dict[str, dict[str, Tally]] = {}
    memo: dict[str, Any] = {}
    memo_key = {"cases": str(args.cases), "code": scoring_code_hash()}
    if args.scores and args.scores.is_file():
        stored = pickle.loads(args.scores.read_bytes())
        memo = stored["memo"] if stored["key"] == memo_key else {}
    for conv_id, conv in conversations.items():
        mine: dict[str, Tally] = {}
        score_conversation(conv, mine, variants, memo.setdefault(conv_id, {}) if args.scores else None)
        print(f"[{time.perf_counter() - started:6.1f}s] {conv_id}: scored", file=sys.stderr)
        per_conversation[conv_id] = mine
        for mode, tally in mine.items():
            tallies.setdefault(mode, Tally()).merge(tally)
    if args.scores:
        args.scores.write_bytes(pickle.dumps({"key": memo_key, "memo": memo}))
    questions = tallies["full"].n
    order = ["full", "vector", "fulltext", "baseline_rrf"] + [m for m in tallies if m not in MODES]
    result: dict[str, Any] = {m: tallies[m].result() for m in order}
    if args.categories:
        # Every mode's and variant's, so a variant can be set against the modes per category.
        result["categories"] = {m: tallies[m].categories() for m in order}
    if sweep:
        result["sweep"] = sweep_report(sweep, per_conversation)
    if families:
        result["left_one_out"] = loo_report(families, per_conversation)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{questions} questions, {len(conversations)} conversations, {time.perf_counter() - started:.0f} s")
    print(f"{'mode':<34}" + "".join(f"{k:>13}" for k in FIGURES))
    for mode in order:
        print(f"{mode:<34}" + "".join(f"{v:>13.3f}" for v in result[mode].values()))
    if args.categories:
        for mode, cats in {m: result["categories"][m] for m in MODES}.items():
            for cat, figures in cats.items():
                print(f"{mode + ' / ' + cat + ' (' + str(figures['n']) + ')':<34}"
                      + "".join(f"{figures[k]:>13.3f}" for k in FIGURES))
    if sweep:
        report = result["sweep"]
        print(f"\nturn R@10 per conversation, sweeping {sweep[0]}")
        for conv, figures in report["per_conversation"].items():
            print(f"{conv:<26}" + "".join(f"{k.split('=')[1]:>8}={v:.3f}" for k, v in figures.items()))
        loo = report["left_one_out"]
        print(f"left one conversation out: turn R@10 {loo['turn_R@10']:.3f}, chosen {loo['chosen']}")
    if families:
        print("\nleft one conversation out, per family (chosen by the mean of the five figures on the other four)")
        for family, report in result["left_one_out"].items():
            print(f"{family:<34}" + "".join(f"{report[k]:>13.3f}" for k in FIGURES)
                  + "   chosen " + ", ".join(sorted(set(report["chosen"].values()))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
