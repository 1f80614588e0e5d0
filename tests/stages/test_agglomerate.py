"""Average-link clustering of the cluster stage: the kept-sums algorithm gives the textbook answer."""

import numpy as np
import pytest

from memvault.stages.cluster_centroid import agglomerate


def textbook(vectors: np.ndarray, threshold: float, penalty: np.ndarray | None = None) -> list[list[int]]:
    """Average link as defined: each step, the mean over every member pair of every group pair."""
    groups = [[i] for i in range(len(vectors))]
    sims = vectors @ vectors.T - (penalty if penalty is not None else 0.0)
    while len(groups) > 1:
        best, pair = threshold, None
        for a in range(len(groups)):
            for b in range(a + 1, len(groups)):
                s = float(sims[np.ix_(groups[a], groups[b])].mean())
                if s >= best:
                    best, pair = s, (a, b)
        if pair is None:
            break
        a, b = pair
        groups[a] = groups[a] + groups[b]
        del groups[b]
    return groups


def _unit(rng: np.random.Generator, n: int, dim: int, centres: int) -> np.ndarray:
    base = rng.normal(size=(centres, dim))
    v = base[rng.integers(0, centres, n)] + 0.6 * rng.normal(size=(n, dim))
    unit: np.ndarray = v / np.linalg.norm(v, axis=1, keepdims=True)
    return unit


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("threshold", [0.2, 0.45, 0.7])
def test_same_groups_as_the_textbook_average_link(seed: int, threshold: float) -> None:
    rng = np.random.default_rng(seed)
    vectors = _unit(rng, 40, 16, 5)
    penalty = None
    if seed % 2:  # the project margin: two projects kept apart by 0.3
        side = rng.integers(0, 2, 40)
        penalty = 0.3 * (side[:, None] != side[None, :])
    got = agglomerate(vectors, threshold, penalty)
    assert got == textbook(vectors, threshold, penalty)
    assert sorted(i for g in got for i in g) == list(range(40))


def test_edges() -> None:
    assert agglomerate(np.zeros((0, 4)), 0.5) == []
    one = np.array([[1.0, 0.0]])
    assert agglomerate(one, 0.5) == [[0]]
    apart = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert agglomerate(apart, 0.5) == [[0], [1]]
    assert agglomerate(apart, -0.1) == [[0, 1]]
