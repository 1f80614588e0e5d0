"""bench/segmentation_train.py: the fit that produces chunk_segment.py's weights."""

import numpy as np

from bench.segmentation_train import fit
from memvault.stages.chunk_segment import probabilities


def test_fit_recovers_which_feature_predicts_a_boundary_in_raw_units() -> None:
    rng = np.random.default_rng(0)
    # Column 0 decides (scaled by 10 so standardizing matters), column 1 is noise.
    x = np.column_stack([rng.normal(0, 10, 400), rng.normal(5, 1, 400)])
    y = (x[:, 0] > 0).astype(float)
    weights, bias = fit(x, y, l2=1.0)
    # Per standard deviation, the deciding column weighs far more than the noise (6.2 against 0.01).
    assert weights[0] * 10 > 50 * abs(weights[1] * 1)
    p = probabilities(x, weights, bias)
    assert ((p >= 0.5) == (y == 1)).mean() > 0.95
