"""Same-language and cross-language recall on a public parallel QA set, per embedder and for
full text.

Data: XQuAD (Artetxe et al., 2020; google-deepmind/xquad on GitHub, CC BY-SA 4.0): the same
240 SQuAD paragraphs and 1,190 questions professionally translated into 11 languages. Read at
run time from ``--xquad DIR`` (a checkout of that repository: ``xquad.<lang>.json``); nothing
of it is copied into this repository. Japanese is not among its languages; Chinese (zh),
Russian (ru, Cyrillic) and Spanish / German (accented Latin) are.

Task: a question in language Q must find its paragraph among the 240 paragraphs in language
P (R@5: the right one among the top five). Q = P is same-language recall; Q = en, P ≠ en
(and the reverse) is cross-language. Every ``--every``-th question is asked (default 6: 199
per language, spread over the paragraphs). Methods:

- ``vector:<embedder>``: cosine over the embedder's vectors (MiniLM; the static table with
  ``--static``). Vectors are cached under ``--cache`` (outside the repository);
- ``fts:icu`` and ``fts:simple``: the node index's full-text search (stores/nodes.py, real
  LanceDB) with today's ICU tokenizer and with the ``simple`` tokenizer memvault used before.

Nothing is tuned here, so there is no split: every figure is a report. One run on a shared
machine; the figures do not depend on its load.

    python bench/multilingual_recall.py --xquad ~/src/xquad --langs en zh ru es de
"""

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lancedb.index import FTS  # noqa: E402

from stores.nodes import NodeIndex  # noqa: E402


def load(xquad: Path, lang: str) -> tuple[list[str], list[tuple[str, int]]]:
    """Paragraphs and (question, paragraph index) of one language, in the file's order (the
    same order in every language: XQuAD is parallel)."""
    data = json.loads((xquad / f"xquad.{lang}.json").read_text(encoding="utf-8"))["data"]
    paragraphs: list[str] = []
    questions: list[tuple[str, int]] = []
    for article in data:
        for para in article["paragraphs"]:
            for qa in para["qas"]:
                questions.append((qa["question"], len(paragraphs)))
            paragraphs.append(para["context"])
    return paragraphs, questions


def recall_at(ranked: list[list[int]], gold: list[int], k: int = 5) -> float:
    return float(np.mean([g in r[:k] for r, g in zip(ranked, gold)])) if gold else 0.0


def embed_cached(embedder: Any, texts: list[str], cache: Path) -> np.ndarray:
    key = hashlib.sha256(("\x1e".join(texts) + embedder.name).encode()).hexdigest()[:16]
    path = cache / f"{embedder.name}-{key}.npy"
    if path.is_file():
        cached: np.ndarray = np.load(path)
        return cached
    vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def fts_index(where: Path, paragraphs: list[str], tokenizer: str) -> NodeIndex:
    from datetime import datetime

    index = NodeIndex(str(where), "none", 8)
    now = datetime(2025, 1, 1)
    index.upsert([{"id": f"p{i}", "doc": f"d{i}", "doc_kind": "article", "path": f"/p{i}", "parent": None,
                   "kind": "paragraph", "title": "", "text": text, "ref": None, "ord": 0, "vector": [0.0] * 8,
                   "pending": True, "content_hash": str(i), "created_at": now, "updated_at": now}
                  for i, text in enumerate(paragraphs)])
    if tokenizer == "icu":
        index.ensure_fts()
    else:  # what memvault built before the ICU tokenizer
        for column in ("text", "fts_text"):
            index.nodes.create_index(column, config=FTS(with_position=False), replace=True)
    return index


def fts_ranked(index: NodeIndex, questions: list[str]) -> list[list[int]]:
    out = []
    for q in questions:
        _, hits = index.recall_search(None, q, 5)
        out.append([int(h["id"][1:]) for h in hits])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--xquad", type=Path, required=True, help="folder with xquad.<lang>.json")
    ap.add_argument("--langs", nargs="+", default=["en", "zh", "ru", "es", "de"])
    ap.add_argument("--every", type=int, default=6, help="ask every n-th question")
    ap.add_argument("--static", action="store_true", help="also the static table (distilled on first use)")
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "memvault-bench" / "multilingual")
    args = ap.parse_args(argv)

    from memvault.embeddings.minilm import MiniLMEmbedder

    embedders: list[Any] = [MiniLMEmbedder()]
    if args.static:
        from memvault.embeddings.static import StaticEmbedder

        embedders.append(StaticEmbedder())
    data = {lang: load(args.xquad, lang) for lang in args.langs}
    asked = {lang: qs[::args.every] for lang, (_, qs) in data.items()}
    pairs = [(q, q) for q in args.langs] + [("en", p) for p in args.langs if p != "en"] + \
            [(q, "en") for q in args.langs if q != "en"]
    rows: dict[str, dict[str, float]] = {}
    for e in embedders:
        paras = {lang: embed_cached(e, data[lang][0], args.cache) for lang in args.langs}
        quest = {lang: embed_cached(e, [q for q, _ in asked[lang]], args.cache) for lang in args.langs}
        row = {}
        for q, p in pairs:
            ranked = np.argsort(-(quest[q] @ paras[p].T), axis=1)[:, :5].tolist()
            row[f"{q}→{p}"] = recall_at(ranked, [g for _, g in asked[q]])
        rows[f"vector:{e.name}"] = row
    with tempfile.TemporaryDirectory(prefix="memvault-ml-") as tmp:
        for tokenizer in ("icu", "simple"):
            row = {}
            for p in args.langs:
                index = fts_index(Path(tmp) / f"{tokenizer}-{p}.lance", data[p][0], tokenizer)
                for q in [q for q, pp in pairs if pp == p]:
                    row[f"{q}→{p}"] = recall_at(fts_ranked(index, [x for x, _ in asked[q]]), [g for _, g in asked[q]])
            rows[f"fts:{tokenizer}"] = row
    cols = [f"{q}→{p}" for q, p in pairs]
    print(f"questions per language: {len(next(iter(asked.values())))}; paragraphs per language: 240; R@5\n")
    print("| method | " + " | ".join(cols) + " |")
    print("|---|" + "---|" * len(cols))
    for name, row in rows.items():
        print(f"| {name} | " + " | ".join(f"{row[c]:.3f}" for c in cols) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
