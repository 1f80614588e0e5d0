"""A static embedder distilled from all-MiniLM-L6-v2: one vector per token, a text is their mean.

The distillation is model2vec's recipe (Tulkens & van Dongen, "Model2Vec", 2024; the
`model2vec` package's ``distill`` with its defaults), done here with the product's own ONNX
graph instead of torch and transformers (model2vec's distill extra pins transformers < 5.4,
which the installed stack is past):

1. every token of the model's WordPiece vocabulary except ``[unused…]`` and ``[UNK]`` goes
   through the MiniLM encoder once as ``[CLS] token [SEP]``; its vector is the mean of the
   three output states (mean pooling before the L2 normalisation of the sentence head);
2. PCA of those vectors (centred, eigen-decomposition of the covariance) to ``STATIC_DIM``
   components, signs fixed so the largest score of each is positive;
3. each row scaled by its SIF weight ``a / (a + p)``, ``a`` = 1e-4, ``p`` the token's Zipf
   probability estimated from its rank in the vocabulary (BERT's vocabulary is roughly in
   frequency order): frequent tokens (``the``, ``,``) weigh little in a text's mean.

A text is then tokenised by the same tokenizer (no special tokens, no truncation), its known
tokens' rows summed and the sum L2-normalised: no matrix product per text, so indexing costs
tokenisation and a gather. It is a different model from MiniLM (other vectors, another
dimension), so an index records it under its own name, ``STATIC_NAME``.

The table is written once per user, beside the ONNX export (``static_path``), the first time
it is needed (about a minute of CPU: ~30k three-token passes), saying so on stderr; a missing
or damaged table is rebuilt the same way. Nothing is downloaded.
"""

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from memvault.embeddings.base import MODEL_DIMS, STATIC_NAME, cache_dir, say
from memvault.embeddings.minilm import MiniLMEmbedder, model_dir
from memvault.embeddings.minilm_graph import GRAPH_VERSION, build_model
from memvault.files import atomic_path, atomic_write_bytes

STATIC_DIM = MODEL_DIMS[STATIC_NAME]  # 256: model2vec's default pca_dims
SIF_COEFFICIENT = 1e-4  # model2vec's default
DISTILL_VERSION = 1  # bumped whenever the table written here changes, so an older one is rebuilt
_SKIP = re.compile(r"^\[(unused\d+|UNK)\]$")  # never produced by text (unused) or dropped at use (UNK)
_TEACHER_DIM = 384
_MEAN = "mean"  # the graph's mean-pooled node, before the L2 normalisation


def static_path() -> Path:
    """The distilled table for the installed weights and the current recipe."""
    weights = model_dir() / "model.safetensors"
    key = hashlib.sha256(f"{weights.stat().st_size}:{GRAPH_VERSION}:{DISTILL_VERSION}:{STATIC_DIM}".encode()).hexdigest()[:12]
    return cache_dir() / "models" / f"{STATIC_NAME}-{key}.npy"


def _tokenizer() -> Any:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()  # a mean of token vectors has no length limit; texts arrive cut at 2,000 chars
    return tok


def _teacher(folder: Path) -> Any:
    """An onnxruntime session of the MiniLM graph with its mean-pooled node as an extra output."""
    import onnx
    import onnxruntime as ort


    graph, weights = build_model(model_dir(), "teacher.onnx.data")
    model = onnx.load_from_string(graph)
    model.graph.output.append(onnx.helper.make_tensor_value_info(_MEAN, onnx.TensorProto.FLOAT, ["batch", _TEACHER_DIM]))
    (folder / "teacher.onnx.data").write_bytes(weights)
    (folder / "teacher.onnx").write_bytes(model.SerializeToString())
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    return ort.InferenceSession(str(folder / "teacher.onnx"), opts, providers=["CPUExecutionProvider"])


def distill_ids(vocab_size: int, cls_id: int, sep_id: int, skip: set[int]) -> list[int]:
    """The token ids to distil: the whole vocabulary minus ``skip``, in id (≈ frequency) order."""
    return [i for i in range(vocab_size) if i not in skip and i not in (cls_id, sep_id)] + [cls_id, sep_id]


def teacher_vectors(ids: list[int], batch_size: int = 512) -> np.ndarray:
    """MiniLM's mean-pooled output (not normalised) for ``[CLS] id [SEP]`` of each of ``ids``."""
    tok = _tokenizer()
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    out = np.empty((len(ids), _TEACHER_DIM), dtype=np.float32)
    with tempfile.TemporaryDirectory(prefix="memvault-distill-") as tmp:
        session = _teacher(Path(tmp))
        for start in range(0, len(ids), batch_size):
            part = ids[start:start + batch_size]
            batch = np.array([[cls_id, i, sep_id] for i in part], dtype=np.int64)
            out[start:start + len(part)] = session.run([_MEAN], {"input_ids": batch, "attention_mask": np.ones_like(batch)})[0]
    return np.nan_to_num(out)


def sif_weights(n: int, coefficient: float = SIF_COEFFICIENT) -> np.ndarray:
    """``a / (a + p(rank))`` with Zipf probabilities ``p ∝ 1 / (rank + 2)`` (model2vec's form)."""
    inv_rank = 1.0 / np.arange(2, n + 2)
    return np.asarray(coefficient / (coefficient + inv_rank / inv_rank.sum()), dtype=np.float64)


def pca(x: np.ndarray, dims: int) -> np.ndarray:
    """``x`` centred and projected on its ``dims`` principal components, each signed so its
    largest-magnitude score is positive (deterministic whatever the eigen-solver returns)."""
    xc = x.astype(np.float64) - x.mean(axis=0)
    _, vecs = np.linalg.eigh(xc.T @ xc / max(len(x) - 1, 1))
    components = vecs[:, ::-1][:, :dims]
    scores = xc @ components
    signs = np.sign(scores[np.abs(scores).argmax(axis=0), np.arange(scores.shape[1])])
    return np.asarray(scores * np.where(signs == 0, 1.0, signs))


def default_ids(tok: Any) -> list[int]:
    """The token ids the table is distilled for: the whole vocabulary but ``[unused…]`` and ``[UNK]``."""
    return distill_ids(tok.get_vocab_size(), tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]"),
                       {i for t, i in tok.get_vocab().items() if _SKIP.match(t)})


def distill(ids: list[int] | None = None, dims: int = STATIC_DIM) -> np.ndarray:
    """The static table: one row per vocabulary id (zeros for ids not distilled), float32.

    ``ids`` restricts the distillation to those token ids (tests build a small table this way);
    default: the whole vocabulary but ``[unused…]`` and ``[UNK]``. Ranks for the SIF weights
    are positions in ``ids`` sorted by id.
    """
    tok = _tokenizer()
    ids = sorted(set(default_ids(tok) if ids is None else ids))
    if len(ids) < dims:
        raise ValueError(f"{len(ids)} tokens cannot give {dims} principal components")
    reduced = pca(teacher_vectors(ids), dims) * sif_weights(len(ids))[:, None]
    table = np.zeros((tok.get_vocab_size(), dims), dtype=np.float32)
    table[ids] = reduced
    return table


def build_table(path: Path, ids: list[int] | None = None) -> Path:
    """Distil and write the table to ``path`` atomically, with its size and checksum beside it."""
    from memvault.errors import ConfigError

    table = distill(ids)
    try:
        with atomic_path(path, suffix=".tmp.npy") as tmp:
            np.save(tmp, table)
            data = tmp.read_bytes()
        meta = {"model": STATIC_NAME, "size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                "tokens": int((np.abs(table).sum(axis=1) > 0).sum()), "dim": table.shape[1]}
        atomic_write_bytes(path.with_suffix(".json"), json.dumps(meta).encode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot write the {STATIC_NAME} table to {path} ({exc.strerror or exc}); "
                          "set MEMVAULT_CACHE_DIR to a writable folder") from exc
    return path


def _table_problem(path: Path) -> str | None:
    """Why the table at ``path`` cannot be used as it is, or None (presence and size)."""
    if not path.is_file():
        return "is missing"
    try:
        meta = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "has no readable record of its size and checksum"
    if meta.get("size") != path.stat().st_size:
        return f"is {path.stat().st_size} bytes, not the {meta.get('size')} it was written with"
    return None


class StaticEmbedder(MiniLMEmbedder):
    """Batch text → L2-normalised float32 vectors: the mean of the distilled token vectors.

    Same interface and counters as :class:`MiniLMEmbedder` (whose batching and counters it reuses); a text with
    no known token (an empty one) gets the zero vector.
    """

    name = STATIC_NAME
    dim = STATIC_DIM

    def __init__(self, batch_size: int = 64, table_file: Path | None = None) -> None:
        """``table_file``: a table written by :func:`build_table` (tests, benchmarks), used as it is."""
        super().__init__(batch_size)
        self.table_file = table_file
        self._table: np.ndarray | None = None

    def _load_table(self) -> tuple[np.ndarray, Any]:
        if self._table is None:
            path = self.table_file or static_path()
            if self.table_file is None:
                problem = _table_problem(path)
                if problem:
                    say(f"the {STATIC_NAME} table at {path} {problem}; distilling it from the installed MiniLM "
                         "weights (once, about a minute of CPU)")
                    build_table(path)
            try:
                table = np.load(path, mmap_mode="r")
            except (OSError, ValueError) as exc:
                if self.table_file is not None:
                    raise
                say(f"the {STATIC_NAME} table at {path} cannot be loaded ({exc}); distilling it again")
                build_table(path)
                table = np.load(path, mmap_mode="r")
            if table.ndim != 2 or table.shape[1] != self.dim:
                raise ValueError(f"{path} holds a {table.shape} table, not one of {self.dim} columns")
            self._tokenizer = tok = _tokenizer()
            self._check_rows(path, table.shape[0], tok)
            self._table = table
        return self._table, self._tokenizer

    def _check_rows(self, path: Path, rows: int, tok: Any) -> None:
        """A table has one row per token of the tokenizer's vocabulary."""
        if rows != tok.get_vocab_size():
            raise ValueError(f"{path} has {rows} rows, not the {tok.get_vocab_size()} tokens of the vocabulary: "
                             "build the table again")

    def _rows(self, ids: np.ndarray) -> np.ndarray:
        """The table rows of one tokenised text (``[UNK]`` already dropped): its tokens' own."""
        return ids

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts``; an empty list costs nothing."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.calls += 1
        self.texts += len(texts)
        table, tok = self._load_table()
        unk = tok.token_to_id("[UNK]")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # No activations to hold, so no need for the transformer's small batches: at least 256
        # texts per tokenizer call, which keeps its per-call cost out of the rate.
        step = max(self.batch_size, 256)
        for start in range(0, len(texts), step):
            encodings = tok.encode_batch(list(texts[start:start + step]), add_special_tokens=False)
            ids = [np.asarray(e.ids, dtype=np.int64) for e in encodings]
            ids = [self._rows(i[i != unk]) for i in ids]
            lengths = np.array([len(i) for i in ids])
            rows = np.flatnonzero(lengths)
            if not len(rows):
                continue
            flat = np.concatenate([ids[r] for r in rows])
            offsets = np.concatenate([[0], np.cumsum(lengths[rows])[:-1]])
            # Sums, not means: the L2 normalisation below removes the length anyway.
            out[start + rows] = np.add.reduceat(table[flat], offsets, axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out
