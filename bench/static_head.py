"""A small non-linear head on the static embedder: does mimicking MiniLM more closely help recall?

The static embedder's text vector (the SIF-weighted mean of its token rows, from a table that
`bench/static_variants.py` writes) goes through a two-layer MLP (384 → HIDDEN → 384, GELU)
trained to give MiniLM's vector of the same text, by cosine, on the chitchat corpus texts of
`bench/static_variants.py` (their MiniLM vectors are the ones it kept in its ``--out``). A text
then costs the table's gather plus ~1.6 MFLOP, still far above 1,000 texts/s on two cores.

    .venv/bin/python bench/static_head.py fit --chitchat DIR/chitchat_dataset/dataset.json --out /tmp/sv --table t_384-lin
    .venv/bin/python bench/static_head.py score /tmp/sv/t_384-lin.head.pt -- --data ../shared/eval/locomo/locomo_dev.json \\
        --embedder all-MiniLM-L6-v2-static --static-table /tmp/sv/t_384-lin.npy --sweep w_cos=0.35 --json

``fit`` prints the held-out cosine to MiniLM (the tenth of the corpus `static_variants.py` holds
out) every five epochs; ``score`` runs `bench/recall_quality.py` with the head after the table.
Needs torch (the test extra).
"""

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import static_word_rows  # noqa: E402
from memvault.embeddings import static as static_embed  # noqa: E402

HIDDEN = 1024


def head(dim: int) -> Any:
    import torch

    return torch.nn.Sequential(torch.nn.Linear(dim, HIDDEN), torch.nn.GELU(), torch.nn.Linear(HIDDEN, 384))


def fit(args: argparse.Namespace) -> int:
    import torch

    from bench.static_variants import corpus_texts, held_out, token_matrix

    torch.manual_seed(0)
    tok = static_embed._tokenizer()
    texts = corpus_texts(args.chitchat, 40_000, "every-third")
    table = np.load(args.out / f"{args.table}.npy")
    x = np.asarray(token_matrix(texts, tok.get_vocab_size()) @ table, dtype=np.float32)
    x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-9)
    y = torch.tensor(np.load(args.out / "corpus-every-third-40000-minilm.npy").astype(np.float32))
    hold, train = (torch.tensor(part) for part in held_out(len(texts)))
    xs = torch.tensor(x)
    model = head(x.shape[1])
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)
    cosine = torch.nn.functional.cosine_similarity
    with torch.no_grad():
        print(f"table alone: held-out cosine to MiniLM {cosine(xs[hold], y[hold]).mean().item():.3f}")
    started = time.process_time()
    for epoch in range(1, args.epochs + 1):
        perm = train[torch.randperm(len(train))]
        for s in range(0, len(perm), 256):
            b = perm[s:s + 256]
            loss = 1 - cosine(model(xs[b]), y[b]).mean()
            opt.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]  # torch: Tensor.backward unannotated
            opt.step()
        if epoch % 5 == 0:
            with torch.no_grad():
                held = cosine(model(xs[hold]), y[hold]).mean().item()
            print(f"epoch {epoch}: held-out cosine to MiniLM {held:.3f} ({time.process_time() - started:.0f} CPU-s)")
    torch.save(model.state_dict(), args.out / f"{args.table}.head.pt")
    return 0


def score(weights: Path, rest: list[str]) -> int:
    import torch

    from bench import recall_quality

    if "--static-table" not in rest[:-1]:
        raise SystemExit("static_head.py score: give the table the head was fitted after (--static-table FILE)")
    model = head(int(np.load(rest[rest.index("--static-table") + 1], mmap_mode="r").shape[1]))
    model.load_state_dict(torch.load(weights))
    model.eval()

    class HeadEmbedder(static_word_rows.WordStaticEmbedder):
        def embed(self, texts: list[str]) -> np.ndarray:
            with torch.no_grad():
                out: np.ndarray = model(torch.from_numpy(np.ascontiguousarray(super().embed(texts), dtype=np.float32))).numpy()
            normed: np.ndarray = out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)
            return normed

    static_word_rows.WordStaticEmbedder = HeadEmbedder  # type: ignore[misc]  # what recall_quality builds from --static-table
    return recall_quality.main(rest)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["score"]:
        rest = argv[3:] if argv[2:3] == ["--"] else argv[2:]
        return score(Path(argv[1]), rest)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fit", help="train the head on the corpus")
    f.add_argument("--chitchat", required=True, type=Path, help="dataset.json of the chitchat-dataset package")
    f.add_argument("--out", required=True, type=Path, help="the --out folder of bench/static_variants.py")
    f.add_argument("--table", default="t_384-lin", help="table name in --out, without .npy")
    f.add_argument("--epochs", type=int, default=30)
    sub.add_parser("score", help="WEIGHTS -- ARGS: bench/recall_quality.py ARGS with the head")
    args = ap.parse_args(argv)
    return fit(args)


if __name__ == "__main__":
    raise SystemExit(main())
