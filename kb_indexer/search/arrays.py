"""Small numpy helpers shared by the vector and sparse full-text scores (numpy is imported only when used)."""

from __future__ import annotations

from typing import Any


def lookup(ids: Any, values: Any, wanted: list[int]) -> dict[int, float]:
    """``{id: value}`` for the ``wanted`` ids found in ``ids`` (sorted ascending, parallel to ``values``)."""
    import numpy as np  # lazy: numpy only for the vector and sparse-index reads

    if not wanted or ids is None or not len(ids):
        return {}
    want = np.asarray(wanted, dtype=np.int64)
    pos = np.clip(np.searchsorted(ids, want), 0, len(ids) - 1)
    hit = ids[pos] == want
    return {int(d): float(s) for d, s, h in zip(want, values[pos], hit) if h}
