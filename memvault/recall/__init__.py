"""Recall: score candidates from the node index, pick within budgets, render the block."""

from memvault.recall.block import escape_frame_tags, find_frame_tags, render_block
from memvault.recall.scoring import Candidate, Scored, ScoringWeights, score_candidates, select

__all__ = [
    "Candidate",
    "Scored",
    "ScoringWeights",
    "escape_frame_tags",
    "find_frame_tags",
    "render_block",
    "score_candidates",
    "select",
]
