"""The one shape every embedder answers in: float32 rows of length 1."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


def normalised(vectors: npt.ArrayLike) -> Vectors:
    """Each row scaled to length 1 (a zero row stays zero), as float32."""
    rows = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    result: Vectors = rows / np.maximum(norms, np.float32(1e-12))
    return result
