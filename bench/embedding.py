"""Embedding throughput: texts/s of the indexing embedder and variants of it, on the texts the
index stage really embeds.

The texts are LoCoMo message nodes as `memvault/stages/index.py` embeds them (`conversation_nodes` →
`rows_for`: each turn with the conversation's title, date and neighbouring turns, cut at 2,000
characters), read from the file given with ``--data`` at run time. Each variant embeds the
same texts through `memvault.embeddings.Embedder` (the product's batching, tokenisation and
length sorting) after one warm-up batch; reported per variant: texts per wall second, texts
per CPU second (what a shared machine's load does not change), the idle-machine bound (CPU
rate × cores used) with the projected hours to embed 1M nodes, and the cosine of its vectors
to the product embedder's (min and mean).

    .venv/bin/python bench/embedding.py --data ../shared/eval/locomo/locomo_dev.json [--texts 2000]
        [--variants fp32,fp32-unsorted,fp32-1thread,fused,int8,fused-int8] [--keep DIR] [--json]

Variants: ``fp32`` (the product: the exported graph, onnxruntime's default optimisations,
one thread per core, texts sorted by length), ``fp32-unsorted`` (no length sorting),
``fp32-1thread``, ``fp32-b16``/``fp32-b256`` (batch size), ``fused`` (onnxruntime's offline
transformer optimiser: fused attention, skip-LayerNorm, bias-GELU), ``int8`` / ``fused-int8``
(dynamic int8 quantisation of the MatMul weights, per channel, of either graph), ``static``
(`memvault.embeddings.static`: the model2vec-style table distilled from the same weights — another
model, so its "cosine to fp32" is not computed: its vectors live in another space),
``static-table`` (the same embedder on the table given with ``--static-table``).
Derived graphs are written under ``--keep`` (default a temporary folder) and reused.
"""

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memvault.embeddings import DIM  # noqa: E402
from memvault.embeddings.minilm import MiniLMEmbedder, build_export, export_path  # noqa: E402
from memvault.markdown.tree import conversation_nodes  # noqa: E402
from bench.recall_quality import sessions, turn_text  # noqa: E402
from memvault.stages.index import rows_for  # noqa: E402

CORES = os.cpu_count() or 1
ALL_VARIANTS = ("fp32", "fp32-unsorted", "fp32-1thread", "fp32-b16", "fp32-b256", "fused", "int8", "fused-int8", "static",
                "static-table")
STATIC_TABLE: Path | None = None  # --static-table: the table of the static-table variant


def index_texts(data: Path, limit: int) -> list[str]:
    """The texts the index stage embeds for LoCoMo's message nodes, in conversation order."""
    out: list[str] = []
    for sample in json.loads(data.read_text(encoding="utf-8")):
        name = str(sample.get("sample_id", "conv"))
        for n, date, raw, turns in sessions(sample["conversation"]):
            msgs: list[tuple[str, str, str, datetime | str | None]] = [
                (str(t["dia_id"]), str(t.get("speaker") or "?"), turn_text(t), date) for t in turns]
            tree = conversation_nodes(f"{name}-s{n}", f"s{n}", f"{name} session {n}",
                                      date.strftime("%Y-%m-%d %H:%M") if date else raw, "locomo", msgs)
            for r in rows_for(f"conv:{name}-s{n}", "conversation", tree, 1):
                if r["kind"] == "message":
                    out.append((r.get("embed_text") or f"{r['title']}\n{r['text']}")[:2000])
                    if len(out) >= limit:
                        return out
    return out


def fused_graph(src: Path, dst: Path) -> Path:
    """onnxruntime's transformer optimiser (model type bert, 12 heads, hidden 384)."""
    if not dst.is_file():
        from onnxruntime.transformers.optimizer import optimize_model

        model = optimize_model(str(src), model_type="bert", num_heads=12, hidden_size=384, opt_level=1)
        model.save_model_to_file(str(dst))
    return dst


def int8_graph(src: Path, dst: Path) -> Path:
    """Dynamic int8 quantisation of the MatMul weights (activations quantised per batch)."""
    if not dst.is_file():
        from onnxruntime.quantization import QuantType, quantize_dynamic

        from onnx import TensorProto

        # The fused graph's contrib ops defeat shape inference; their outputs are float.
        quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=["MatMul"],
                         extra_options={"DefaultTensorType": TensorProto.FLOAT})
    return dst


def make_embedder(variant: str, keep: Path) -> MiniLMEmbedder:
    base = export_path()
    if not base.is_file():
        build_export(base)
    if variant == "fp32":
        return MiniLMEmbedder()
    if variant == "fp32-unsorted":
        e = MiniLMEmbedder()
        e.sort_by_length = False
        return e
    if variant == "fp32-1thread":
        return MiniLMEmbedder(threads=1)
    if variant.startswith("fp32-b"):
        return MiniLMEmbedder(batch_size=int(variant[6:]))
    if variant == "fused":
        return MiniLMEmbedder(model_file=fused_graph(base, keep / "fused.onnx"))
    if variant == "int8":
        return MiniLMEmbedder(model_file=int8_graph(base, keep / "int8.onnx"))
    if variant in ("static", "static-table"):
        from bench.static_word_rows import WordStaticEmbedder
        from memvault.embeddings.static import StaticEmbedder

        if variant == "static-table" and STATIC_TABLE is None:
            raise SystemExit("the static-table variant needs --static-table FILE (bench/static_variants.py writes them)")
        table = STATIC_TABLE if variant == "static-table" else None
        # The product's embedder for its own table; a bench table may hold word rows.
        e = WordStaticEmbedder(table_file=table) if table is not None else StaticEmbedder()
        if table is not None:
            e.dim = int(np.load(table, mmap_mode="r").shape[1])
        e.embed(["distil the table now, if it is missing, not inside the timed pass"])
        return e
    if variant == "fused-int8":
        return MiniLMEmbedder(model_file=int8_graph(fused_graph(base, keep / "fused.onnx"), keep / "fused-int8.onnx"))
    raise SystemExit(f"unknown variant {variant!r}; known: {', '.join(ALL_VARIANTS)}")


def measure(embedder: MiniLMEmbedder, texts: list[str], repeat: int = 1) -> tuple[float, float, np.ndarray]:
    """(texts per wall second, texts per CPU second of this process, vectors) of one pass over
    ``texts`` in batches of 256, as `embed_rows` calls it.

    On a shared machine the wall rate says how loaded it was; the CPU rate does not, and
    times the cores in use bounds what an idle machine gives.
    """
    embedder.embed(texts[:64])  # warm-up: session load, first-run allocations
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(repeat):
        vecs = np.concatenate([embedder.embed(texts[i:i + 256]) for i in range(0, len(texts), 256)])
    done = len(texts) * repeat
    return done / (time.perf_counter() - wall), done / (time.process_time() - cpu), vecs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True, help="a LoCoMo-schema JSON file (read, never copied)")
    ap.add_argument("--texts", type=int, default=2000, help="texts embedded per variant")
    ap.add_argument("--variants", default="fp32,fp32-unsorted,fp32-1thread,fused,int8,fused-int8")
    ap.add_argument("--keep", type=Path, default=None, help="folder for derived graphs (default: temporary)")
    ap.add_argument("--static-table", type=Path, default=None,
                    help="the table of the static-table variant (a variant of bench/static_variants.py; one fitted into "
                         "MiniLM's space has 384 columns, and then a cosine to fp32)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    global STATIC_TABLE
    STATIC_TABLE = args.static_table
    texts = index_texts(args.data, args.texts)
    with tempfile.TemporaryDirectory(prefix="mv-emb-") as tmp:
        keep = args.keep or Path(tmp)
        keep.mkdir(parents=True, exist_ok=True)
        reference: np.ndarray | None = None
        results: dict[str, dict[str, Any]] = {}
        for variant in args.variants.split(","):
            rate, cpu_rate, vecs = measure(make_embedder(variant, keep), texts, 20 if variant.startswith("static") else 1)
            if vecs.shape[1] == DIM:
                if reference is None:
                    reference = vecs if variant == "fp32" else MiniLMEmbedder().embed(texts)
                cos: np.ndarray | None = (vecs * reference).sum(axis=1)
            else:
                cos = None  # another model's vectors (another dimension): no cosine to the product's
            # Idle 2-core bound: the CPU rate times the threads a variant runs (1 or 2; the
            # static embedder tokenises and sums on one thread).
            idle = cpu_rate * (1 if variant in ("fp32-1thread", "static", "static-table") else CORES)
            results[variant] = {"texts_per_s": round(rate, 1), "texts_per_cpu_s": round(cpu_rate, 1),
                                "idle_texts_per_s": round(idle, 1), "idle_hours_per_1M": round(1e6 / idle / 3600, 3),
                                "cos_min": None if cos is None else round(float(cos.min()), 5),
                                "cos_mean": None if cos is None else round(float(cos.mean()), 6)}
            similarity = "another model" if cos is None else f"cos to fp32 min {cos.min():.5f} mean {cos.mean():.6f}"
            print(f"{variant:>14}: {rate:7.1f} texts/s wall, {cpu_rate:6.1f} per CPU-s, idle bound {idle:6.1f}/s "
                  f"(1M in {1e6 / idle / 3600:6.3f} h); {similarity}", file=sys.stderr, flush=True)
    lengths = [len(t) for t in texts]
    summary = {"texts": len(texts), "mean_chars": round(float(np.mean(lengths)), 1), "variants": results}
    print(json.dumps(summary, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
