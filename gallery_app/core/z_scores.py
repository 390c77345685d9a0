"""Scores of different kinds made addable: each as how many standard deviations it lies above the mean of
its column. Chat retrieval, its second reading and notes search all weigh signals on this one scale."""

from __future__ import annotations

import numpy as np


def z_scores(scores: np.ndarray) -> np.ndarray:
    """``scores`` (one column, or one per question) standardised along the first axis; a column whose scores
    are all equal becomes zeros rather than a division by zero."""
    spread = scores.std(axis=0)
    return (scores - scores.mean(axis=0)) / np.where(spread > 0, spread, 1.0)
