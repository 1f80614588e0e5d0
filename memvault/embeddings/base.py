"""What every embedder is (the ``Embedder`` protocol), the names of the bundled models, and
the per-user cache folder their derived files live in."""

import os
import sys
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

MODEL_NAME = "all-MiniLM-L6-v2"
DIM = 384
# The static table distilled from MiniLM (memvault.embeddings.static); named here so that
# opening an index needs no import of it.
STATIC_NAME = "all-MiniLM-L6-v2-static"
# MiniLM with its MatMul weights quantised to int8 (opt-in: ~1.6× less CPU per text, other
# vectors, so its own name and index; memvault.embeddings.minilm builds it from the export).
INT8_NAME = "all-MiniLM-L6-v2-int8"
MODEL_DIMS = {MODEL_NAME: DIM, STATIC_NAME: 256, INT8_NAME: DIM}
CACHE_ENV = "MEMVAULT_CACHE_DIR"


@runtime_checkable
class Embedder(Protocol):
    """Batch text → L2-normalised float32 vectors of ``dim`` columns.

    ``name`` identifies the vectors (it is stored with the index; two embedders of one name
    give interchangeable vectors). ``calls``/``texts`` count the work done, which is how a
    run reports what it embedded. ``batch_size`` is how many texts go to the model at once.
    """

    @property
    def batch_size(self) -> int:
        """Texts sent to the model at once."""
        ...

    @property
    def calls(self) -> int:
        """Calls of ``embed`` that reached the model."""
        ...

    @property
    def texts(self) -> int:
        """Texts the model embedded."""
        ...

    @property
    def name(self) -> str:
        """Which vectors these are (stored with the index)."""
        ...

    @property
    def dim(self) -> int:
        """Columns of a vector."""
        ...

    def embed(self, texts: list[str]) -> np.ndarray:
        """One row per text; an empty list costs nothing."""
        ...

    def embed_one(self, text: str) -> np.ndarray:
        """The vector of one text."""
        ...


def cache_dir() -> Path:
    """Where derived model files live: ``$MEMVAULT_CACHE_DIR``, else the user's cache
    (``$XDG_CACHE_HOME`` or ``~/.cache``) under ``memvault/``.

    Per user rather than per home: an export depends only on the installed weights, so every
    home (and every test's temporary home) shares one ~90 MB file instead of copying it.
    """
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memvault"


def say(message: str) -> None:
    """One line on stderr (a model file being rebuilt, a fallback taken)."""
    print(f"memvault: {message}", file=sys.stderr, flush=True)
