"""What recall scores: a node offered by the vector or full-text search, or lifted by one
(memvault.recall.scoring scores it, memvault.recall.gather adds the evidence of its neighbours)."""

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np


@dataclass
class Candidate:
    """A node offered for recall: a vector or full-text hit, or a node lifted by one."""

    id: str
    parent: str | None = None
    cos: float | None = None  # cosine to the query; None when not a vector hit
    sentence_cos: float | None = None  # a turn's best sentence's cosine to the query; None: no sentence vectors
    lexical: float | None = None  # raw BM25; None when not a full-text hit
    vector_rank: int | None = None  # 1-based
    fts_rank: int | None = None  # 1-based
    age_days: float | None = None  # None: computed from timestamp and now, else unknown
    importance: float = 0.0
    access: int = 0
    similar: list[tuple[str, float]] = field(default_factory=list)
    children: list[str] = field(default_factory=list)  # filled for exchange hits only
    siblings: list[str] = field(default_factory=list)  # filled for message hits only: same exchange
    reply: str | None = None  # a message: the next turn of its conversation
    vector: np.ndarray | None = None
    sentences: np.ndarray | None = None  # a turn's sentence vectors, one per row (index.sentence_vectors)
    chars: int = 0
    text: str = ""
    timestamp: datetime | None = None
    in_project: bool = False  # of the project the recall is made from (memvault.recall.scope)
    doc: str | None = None  # the document (an article, a conversation or session) the node is part of
    hop_rank: int | None = None  # 1-based rank in the second hop's full-text search
