"""Where the benchmarks read their data sets: one root for all of them.

The root is ``$KBINDEX_BENCH_DATA`` when that is set, else ``shared/data`` beside the checkout
(``../shared/data`` from the repository). It holds:

* ``cranfield/``: the Cranfield collection in BEIR format (``corpus.jsonl``, ``queries.jsonl``, ``qrels.tsv``):
  1,400 aeronautics abstracts and 225 judged queries, the collection the full-text parameters were tuned on.
* ``skills/``: 862 real agent skills (``catalog.jsonl``: name and description) and 60 labelled dev queries
  (``queries_dev.jsonl``).

Data the repository carries itself (tuning and held-out message sets, personal notes) is in ``bench/data/``;
CISI and CACM are converted from their SMART sources by ``bench/smart_collection.py`` (see its docstring).
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROOT_VARIABLE = "KBINDEX_BENCH_DATA"
DEFAULT_ROOT = REPO.parent / "shared" / "data"


def data_root() -> Path:
    """The folder that holds the shared data sets (``$KBINDEX_BENCH_DATA``, else ``../shared/data``)."""
    value = os.environ.get(ROOT_VARIABLE, "").strip()
    return Path(value).expanduser() if value else DEFAULT_ROOT


def data_dir(name: str) -> Path:
    """One data set's folder under :func:`data_root` (``cranfield``, ``skills``)."""
    return data_root() / name
