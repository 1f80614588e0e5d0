"""How well a phrase sums a text up: its cosine to the text's vector, for memvault.naming.titles.

A phrase close to a topic's centroid (or to one chunk's vector) names it; a name mentioned in
passing ("Bubbles", the starter's name; "Santa Luzia" in a list of sights) does not.
"""

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

# Cosine of each phrase to the topic's own vector (the chunks' centroid, or one chunk's), and
# how strongly it weighs a phrase's score (score × cosine ** SIM_POWER).
Similarity = Callable[[list[str]], Sequence[float]]
SIM_POWER = 2.0


class PhraseEmbedder(Protocol):
    """What `similarity_to` needs of an embedder (memvault.embeddings.Embedder): unit vectors."""

    def embed(self, texts: list[str]) -> np.ndarray: ...


def similarity_to(embedder: PhraseEmbedder, vector: np.ndarray) -> Similarity:
    """A `Similarity` against ``vector`` (a unit vector of the embedder's space)."""
    def similarity(phrases: list[str]) -> list[float]:
        return [float(s) for s in embedder.embed(phrases) @ vector] if phrases else []
    return similarity


def unit_mean(vectors: np.ndarray) -> np.ndarray:
    """The unit mean of ``vectors`` (rows)."""
    mean = vectors.mean(axis=0)
    return np.asarray(mean / (np.linalg.norm(mean) or 1.0), dtype=np.float32)
