"""A damaged or crafted ``skills_vectors`` meta row (another dimension, names that are not strings, NaN or
infinite values, vectors far from unit length) never crashes `skills match`, never puts NaN in its JSON and
never lets a skill's cosine exceed 1: such vectors are left out of the channel, as if absent."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from helpers import write_skills

from kb_indexer.skills.sync import VECTORS_KEY
from kb_indexer.skills.vectors import model_problem
from kb_indexer.store import meta
from kb_indexer.store.connection import transaction

pytestmark = pytest.mark.skipif(model_problem() is not None, reason=f"the local model: {model_problem()}")

SKILLS = {
    "git-commit": "Write conventional commit messages for staged changes.",
    "pdf-forms": "Fill PDF forms and extract their fields.",
}


@pytest.fixture
def k(small, tmp_path):
    handle, _ = small
    assert handle.skills.sync([str(write_skills(tmp_path / "skills", SKILLS))])["errors"] == []
    handle.skills.embed()
    return handle


def _rewrite(k, change) -> None:
    data = meta.get_json(k.conn, VECTORS_KEY)
    matrix = np.frombuffer(base64.b64decode(data["data"]), dtype="<f4").reshape(len(data["names"]), data["dim"])
    change(data, matrix.copy())
    with transaction(k.conn):
        meta.put_json(k.conn, VECTORS_KEY, data)


def _set_matrix(data, matrix) -> None:
    data["dim"] = matrix.shape[1]
    data["data"] = base64.b64encode(np.asarray(matrix, dtype="<f4").tobytes()).decode("ascii")


def _scaled(data, m):
    m[1] *= 1000
    _set_matrix(data, m)


def _nan(data, m):
    m[1] = np.nan
    _set_matrix(data, m)


def _inf(data, m):
    m[1] = np.inf
    _set_matrix(data, m)


def _other_dim(data, m):
    _set_matrix(data, np.ones((m.shape[0], 2)))


def _list_name(data, m):
    data["names"] = [["git-commit"], data["names"][1]]


@pytest.mark.parametrize("change", [_scaled, _nan, _inf, _other_dim, _list_name])
def test_a_damaged_vectors_row_never_crashes_nor_bends_the_match(k, change):
    _rewrite(k, change)
    for message in ("fill in the fields of this pdf form", "write a commit message", "how tall is everest"):
        out = k.skills.match(message, use_llm=False)
        json.dumps(out, allow_nan=False)   # valid JSON: no NaN or Infinity
        assert all(m["score"] <= 1.0 for m in out["matched"] if m["source"] == "vectors")
        assert out["vectors"].get("best", 0.0) <= 1.0
    k.skills.embed()   # and the next embed repairs it
    assert k.skills.match("fill in the fields of this pdf form", use_llm=False)["vectors"]["skills"] == 2
