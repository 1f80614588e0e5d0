"""Recall latency and index cost on synthetic node indexes (no embedding model).

Each size runs in a fresh subprocess (so peak RSS is that size's own). A worker builds an
index of N nodes — conversations of exchanges and messages, clustered random unit vectors
(384-d), generated text with per-cluster topic words, one to three `similar` edges per
message (in the rows' ``similar`` column, where the index stage keeps them) — through the
real ``NodeIndex`` (``upsert``, ``ensure_indexes``, which adds the ANN index past
``index.ann_threshold``), then measures:

- ``p50_ms``/``p95_ms``: ``MemoryService.recall`` (vector ∪ full-text candidates, scoring,
  propagation, budgets, block) with a stub embedder that returns a prepared query vector,
  so query embedding is excluded, in a service prewarmed as a server's is (``prewarm_s``);
- ``overlap``: top-10 of the vector half of ``NodeIndex.recall_search`` (ANN when built) against exact cosine
  top-10 computed in numpy;
- ``write_ms_per_node``: one incremental index-stage write of a fixed batch of new nodes
  (``memvault.stages.index.write_index``: upsert, bounded `similar` edges, index upkeep), per node;
- ``build_s``: bulk load plus index creation; ``rss_mb``: the worker's peak RSS;
- with ``--embed-data FILE``: the indexing embedder's texts/s on LoCoMo message texts and the
  projected hours to index 1M nodes (embedding plus the write cost per node).

    .venv/bin/python bench/recall_latency.py --nodes 10000,100000,1000000 --json
"""

import argparse
import itertools
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DIM = 384
MODEL = "all-MiniLM-L6-v2"
MESSAGES_PER_EXCHANGE, EXCHANGES_PER_DOC = 2, 10
NODES_PER_DOC = 1 + EXCHANGES_PER_DOC * (1 + MESSAGES_PER_EXCHANGE)


class StubEmbedder:
    """Stands in for MiniLM: returns vectors prepared for each text (the index is measured,
    not the model)."""

    name, dim = MODEL, DIM

    def __init__(self) -> None:
        self.table: dict[str, np.ndarray] = {}

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.table[t] for t in texts]) if texts else np.zeros((0, DIM), np.float32)

    def embed_one(self, text: str) -> np.ndarray:
        return self.table[text]


class Corpus:
    """Clustered unit vectors and topic-flavoured text, reproducible from a seed."""

    def __init__(self, n_clusters: int, seed: int = 7) -> None:
        self.rng = np.random.default_rng(seed)
        self.centers = self._unit(self.rng.standard_normal((n_clusters, DIM)))
        syllables = [a + b for a in "bdfgklmnprstvz" for b in "aeiou"]
        vocab = {"".join(self.rng.choice(syllables, size=3)) for _ in range(30_000)}
        self.vocab = np.array(sorted(vocab))
        self.topics = self.rng.integers(0, len(self.vocab), size=(n_clusters, 25))
        weights = 1 / np.arange(1, len(self.vocab) + 1)
        self.zipf_cdf = np.cumsum(weights / weights.sum())

    @staticmethod
    def _unit(x: np.ndarray) -> np.ndarray:
        unit: np.ndarray = (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)
        return unit

    def vectors(self, clusters: np.ndarray, spread: float = 0.8) -> np.ndarray:
        noise = self.rng.standard_normal((len(clusters), DIM)).astype(np.float32) / np.sqrt(DIM)
        return self._unit(self.centers[clusters] + spread * noise)

    def texts(self, clusters: np.ndarray, words: int = 18) -> list[str]:
        """One text per cluster id: half its topic words, half Zipf-distributed common words."""
        n, half = len(clusters), words // 2
        topic = self.topics[clusters[:, None], self.rng.integers(0, self.topics.shape[1], size=(n, half))]
        common = np.minimum(np.searchsorted(self.zipf_cdf, self.rng.random((n, words - half))), len(self.vocab) - 1)
        mixed = self.vocab[np.concatenate([topic, common], axis=1)]
        return [" ".join(row) for row in self.rng.permuted(mixed, axis=1)]


def make_docs(corpus: Corpus, first_doc: int, n_docs: int, base_time: datetime) -> tuple[list[dict[str, Any]], np.ndarray]:
    """Rows (index schema) of ``n_docs`` synthetic conversations and their clusters."""
    from memvault.stages.index import node_id

    rows: list[dict[str, Any]] = []
    clusters = corpus.rng.integers(0, len(corpus.centers), size=n_docs)
    msg_clusters = np.repeat(clusters, EXCHANGES_PER_DOC * MESSAGES_PER_EXCHANGE)
    msg_vecs = corpus.vectors(msg_clusters)
    msg_texts = corpus.texts(msg_clusters)
    node_clusters = []
    m = 0
    for d in range(n_docs):
        doc = f"conv:synthetic-{first_doc + d}"
        created = (base_time + timedelta(minutes=first_doc + d)).replace(tzinfo=None)

        def row(path: str, parent: str | None, kind: str, text: str, vec: np.ndarray, order: int) -> dict[str, Any]:
            return {"id": node_id(doc, path), "doc": doc, "doc_kind": "conversation", "path": path,
                    "parent": node_id(doc, parent) if parent else None, "kind": kind, "title": text[:60],
                    "text": text, "ref": None, "ord": order, "vector": corpus._unit(vec), "pending": False,
                    "content_hash": node_id(doc, path + text), "created_at": created, "updated_at": created,
                    "importance": 0.3, "access": 0, "similar": [], "reply": None, "kin": []}

        doc_rows = []
        doc_vecs = msg_vecs[m:m + EXCHANGES_PER_DOC * MESSAGES_PER_EXCHANGE]
        doc_rows.append(row("/", None, "conversation", f"synthetic conversation {first_doc + d}", doc_vecs.mean(0), 0))
        for e in range(EXCHANGES_PER_DOC):
            texts = msg_texts[m:m + MESSAGES_PER_EXCHANGE]
            vecs = msg_vecs[m:m + MESSAGES_PER_EXCHANGE]
            doc_rows.append(row(f"/e{e + 1}", "/", "exchange", "\n".join(texts), vecs.mean(0), len(doc_rows)))
            for k, (t, v) in enumerate(zip(texts, vecs), start=1):
                doc_rows.append(row(f"/e{e + 1}/m{k}", f"/e{e + 1}", "message", t, v, len(doc_rows)))
            m += MESSAGES_PER_EXCHANGE
        # Links as `memvault.stages.index.rows_for` makes them: each turn to the next, an exchange to its
        # messages, a message to the other messages of its exchange.
        messages = [r for r in doc_rows if r["kind"] == "message"]
        for r, nxt in itertools.pairwise(messages):
            r["reply"] = nxt["id"]
        for r in doc_rows:
            if r["kind"] == "exchange":
                r["kin"] = [m["id"] for m in messages if m["parent"] == r["id"]]
        for msg in messages:
            msg["kin"] = [o["id"] for o in messages if o["parent"] == msg["parent"] and o is not msg]
        rows += doc_rows
        node_clusters += [int(clusters[d])] * len(doc_rows)
    return rows, np.array(node_clusters)


def synthetic_edges(rows: list[dict[str, Any]], clusters: np.ndarray, rng: np.random.Generator) -> None:
    """One to three `similar` edges per message, to nodes of the same cluster, set in the
    rows' ``similar`` column (where ``NodeIndex.set_edges`` keeps them)."""
    by_cluster: dict[int, list[int]] = {}
    for i, c in enumerate(clusters):
        by_cluster.setdefault(int(c), []).append(i)
    for i, r in enumerate(rows):
        if r["kind"] != "message":
            continue
        mates = by_cluster[int(clusters[i])]
        for j in rng.choice(mates, size=min(len(mates), int(rng.integers(1, 4))), replace=False):
            if j != i:
                r["similar"].append({"id": rows[j]["id"], "sim": float(rng.uniform(0.72, 0.9))})


def exact_top(nodes: Any, queries: np.ndarray, k: int, batch: int = 50_000) -> list[set[str]]:
    """Exact cosine top-``k`` ids of each query over every stored vector, read back from the
    index a batch at a time (the vectors are unit length, so cosine is a dot product)."""
    best = [np.full(0, -np.inf, np.float32)] * len(queries)
    best_ids: list[np.ndarray] = [np.array([], dtype=object)] * len(queries)
    for part in nodes.nodes.search().select(["id", "vector"]).limit(100_000_000).to_batches(batch):
        vectors = part.column("vector").flatten().to_numpy(zero_copy_only=False).reshape(-1, DIM)
        ids = np.array(part.column("id").to_pylist(), dtype=object)
        scores = queries @ vectors.T
        for q in range(len(queries)):
            top = np.argpartition(-scores[q], min(k, len(ids) - 1))[:k]
            merged = np.concatenate([best[q], scores[q][top]])
            merged_ids = np.concatenate([best_ids[q], ids[top]])
            keep = np.argsort(-merged)[:k]
            best[q], best_ids[q] = merged[keep], merged_ids[keep]
    return [set(b) for b in best_ids]


def worker(n: int, queries: int, batch: int, keep: Path | None = None) -> dict[str, Any]:
    from memvault.ops.memory import MemoryService
    from memvault.config.settings import load_settings
    from stores.location import index_uri
    from stores.nodes import NodeIndex
    from memvault.stages.index import write_index

    n_docs = max(1, n // NODES_PER_DOC)
    corpus = Corpus(n_clusters=max(32, int(np.sqrt(n_docs) * 4)))
    base = datetime(2025, 1, 1)
    # Queries: near a random node, with a few of its cluster's topic words. The nodes are
    # picked before the data exists (their number is known), so only their vectors are kept
    # while the index is generated — never a matrix of every vector (1.5 GB at 1M nodes).
    qrng = np.random.default_rng(11)
    total = n_docs * NODES_PER_DOC
    picks = qrng.integers(0, total, size=queries)
    picked: dict[int, tuple[np.ndarray, int]] = {}
    with tempfile.TemporaryDirectory(prefix="mv-lat-") as tmp:
        settings = load_settings(Path(tmp), index={"uri": str(Path(tmp) / "nodes.lance")})
        settings.state_dir.mkdir(parents=True)  # recall appends to the access log there
        # --keep: build once into KEEP/<n>, later runs measure a copy (the timed write
        # changes the index); the data is regenerated from the same seed either way.
        kept = keep / str(n) if keep else None
        reuse = kept is not None and (kept / "nodes.lance").exists()
        if kept is not None and reuse:
            shutil.copytree(kept / "nodes.lance", index_uri(settings))
        nodes = NodeIndex.open_or_create(settings)
        wanted = set(int(p) for p in picks)
        loaded = 0
        started = time.perf_counter()
        chunk_docs = max(1, 50_000 // NODES_PER_DOC)
        for first in range(0, n_docs, chunk_docs):
            gen_start = time.perf_counter()
            rows, clusters = make_docs(corpus, first, min(chunk_docs, n_docs - first), base)
            for i in wanted.intersection(range(loaded, loaded + len(rows))):
                picked[i] = (np.asarray(rows[i - loaded]["vector"], dtype=np.float32), int(clusters[i - loaded]))
            loaded += len(rows)
            synthetic_edges(rows, clusters, corpus.rng)
            started -= time.perf_counter() - gen_start  # data generation is not build time
            if reuse:
                continue
            nodes.append(rows)  # a fresh index: new ids only
            print(f"  {n}: loaded {loaded} nodes ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
        del rows
        built = nodes.ensure_indexes(settings.index.ann_threshold)
        build_s = time.perf_counter() - started
        if kept is not None:
            if reuse:
                build_s = json.loads((kept / "build.json").read_text())["build_s"]
            else:
                shutil.copytree(index_uri(settings), kept / "nodes.lance")
                (kept / "build.json").write_text(json.dumps({"build_s": round(build_s, 1)}))
        print(f"  {n}: indexes {built} after {build_s:.0f} s", file=sys.stderr, flush=True)

        stub = StubEmbedder()
        qtexts, qvecs = [], []
        for j, p in enumerate(picks):
            vec, cluster = picked[int(p)]
            v = vec + 0.5 * qrng.standard_normal(DIM).astype(np.float32) / np.sqrt(DIM)
            v = (v / np.linalg.norm(v)).astype(np.float32)
            words = corpus.vocab[qrng.choice(corpus.topics[cluster], size=3)]
            text = f"q{j} " + " ".join(words)
            stub.table[text] = v
            qtexts.append(text)
            qvecs.append(v)

        ix = settings.index
        exact_ids = exact_top(nodes, np.stack(qvecs[: min(100, queries)]), 10)
        overlap = []
        for v, exact in zip(qvecs, exact_ids):
            vector_hits, _ = nodes.recall_search(v, "", 10, nprobes=ix.ann_nprobes, refine_factor=ix.ann_refine_factor)
            got = {r["id"] for r in vector_hits}
            overlap.append(len(got & exact) / 10)

        service = MemoryService(settings, stub)  # type: ignore[arg-type]
        t0 = time.perf_counter()
        service.prewarm()  # as the servers do when they start (memvault.servers.open_service)
        prewarm_s = time.perf_counter() - t0
        for text in qtexts[:5]:
            service.recall(text)  # warm caches
        times, cpu_times = [], []
        for text in qtexts:
            t0, c0 = time.perf_counter(), time.process_time()
            service.recall(text)
            times.append((time.perf_counter() - t0) * 1000)
            cpu_times.append((time.process_time() - c0) * 1000)  # every thread of the process

        # One incremental index-stage write of a fixed batch of new nodes.
        new_rows, _ = make_docs(corpus, n_docs, max(1, batch // NODES_PER_DOC), base + timedelta(days=30))
        for r in new_rows:
            r["embed_text"] = f"w{r['id']}"
            stub.table[r["embed_text"]] = np.asarray(r["vector"], dtype=np.float32)
            r["vector"], r["pending"] = None, True
        t0, c0 = time.perf_counter(), time.process_time()
        write_index(nodes, stub, new_rows, [], settings.index)
        write_s, write_cpu_s = time.perf_counter() - t0, time.process_time() - c0

        return {
            "p50_ms": round(float(np.percentile(times, 50)), 2),
            "p95_ms": round(float(np.percentile(times, 95)), 2),
            "p50_cpu_ms": round(float(np.percentile(cpu_times, 50)), 2),
            "overlap": round(float(np.mean(overlap)), 4),
            "write_ms_per_node": round(write_s * 1000 / len(new_rows), 3),
            "write_cpu_ms_per_node": round(write_cpu_s * 1000 / len(new_rows), 3),
            "build_s": round(build_s, 1),
            "prewarm_s": round(prewarm_s, 2),
            "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "nodes": nodes.count(),
            "ann": nodes.has_ann(),
        }


def embedding_rate(data: Path, texts: int, results: dict[str, Any]) -> dict[str, Any]:
    """Texts/s of the indexing embedder (the product's, on the texts the index stage embeds:
    ``bench/embedding.py``) and the projected hours to index 1M nodes: embedding at that rate
    plus the write cost per node of the largest size measured (wall, and at the CPU rate ×
    cores, what an idle machine gives)."""
    from bench.embedding import CORES, index_texts, measure

    from memvault.embeddings.minilm import MiniLMEmbedder

    wall_rate, cpu_rate, _ = measure(MiniLMEmbedder(), index_texts(data, texts))
    sizes = [r for k, r in results.items() if k.isdigit() and "error" not in r]
    largest = max(sizes, key=lambda r: r["nodes"]) if sizes else {}
    write_ms = float(largest.get("write_ms_per_node", 0.0))
    write_cpu_ms = float(largest.get("write_cpu_ms_per_node", write_ms))
    idle_rate = cpu_rate * min(CORES, 2)  # the product runs one onnxruntime thread per core, at most two here
    return {"texts": texts, "texts_per_s": round(wall_rate, 1), "texts_per_cpu_s": round(cpu_rate, 1),
            "idle_texts_per_s": round(idle_rate, 1),
            "index_1m_h": round((1e6 / wall_rate + 1e6 * write_ms / 1000) / 3600, 2),
            "index_1m_idle_h": round((1e6 / idle_rate + 1e6 * write_cpu_ms / 1000) / 3600, 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", default="10000,100000", help="comma-separated index sizes")
    ap.add_argument("--queries", type=int, default=200, help="recall queries timed per size")
    ap.add_argument("--batch", type=int, default=1000, help="nodes in the timed incremental write")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--keep", type=Path, default=None, metavar="DIR",
                    help="build each size's index once into DIR/<N> and measure copies of it on later runs")
    ap.add_argument("--embed-data", type=Path, default=None, metavar="FILE",
                    help="LoCoMo-schema file: also time the indexing embedder on its message texts and project 1M nodes")
    ap.add_argument("--embed-texts", type=int, default=256, help="texts embedded with --embed-data")
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker is not None:
        print(json.dumps(worker(args.worker, args.queries, args.batch, args.keep)))
        return 0
    results: dict[str, Any] = {}
    for n in [int(x) for x in args.nodes.split(",") if x.strip()]:
        out = subprocess.run([sys.executable, __file__, "--worker", str(n), "--queries", str(args.queries),
                              "--batch", str(args.batch)] + (["--keep", str(args.keep)] if args.keep else []),
                             stdout=subprocess.PIPE, text=True, check=False)
        if out.returncode:
            results[str(n)] = {"error": f"worker exited {out.returncode}"}
            continue
        results[str(n)] = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{n}: {results[str(n)]}", file=sys.stderr, flush=True)
    if args.embed_data is not None:
        results["embedding"] = embedding_rate(args.embed_data, args.embed_texts, results)
        print(f"embedding: {results['embedding']}", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(f"{'nodes':>9} {'p50 ms':>8} {'p95 ms':>8} {'overlap':>8} {'write ms/node':>14} {'build s':>8} {'RSS MB':>8}")
        for key, r in results.items():
            if key == "embedding":
                continue
            if "error" in r:
                print(f"{key:>9} {r['error']}")
                continue
            print(f"{key:>9} {r['p50_ms']:>8} {r['p95_ms']:>8} {r['overlap']:>8} {r['write_ms_per_node']:>14} "
                  f"{r['build_s']:>8} {r['rss_mb']:>8}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
