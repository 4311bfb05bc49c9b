"""An LLM setting the vectors channel does not use, malformed in the environment or `.env`
(``KBINDEX_LLM_TIMEOUT=abc``), does not stop `skills match --no-llm` on an index with skill vectors: the
keyword match stays and ``vectors.fallback`` says why (it was bad usage, exit 2, only once vectors existed)."""

from __future__ import annotations

import pytest

from helpers import write_skills

from kb_indexer.skills.vectors import model_problem

pytestmark = pytest.mark.skipif(model_problem() is not None, reason=f"the local model: {model_problem()}")


@pytest.mark.parametrize("var,value", [("KBINDEX_LLM_TIMEOUT", "abc"), ("KBINDEX_LLM_RETRIES", "x")])
def test_a_malformed_llm_setting_leaves_the_keyword_match(small, tmp_path, monkeypatch, var, value):
    k, _ = small
    skills = {"git-commit": "Write conventional commit messages for staged changes.", "pdf-forms": "Fill PDF forms."}
    assert k.skills.sync([str(write_skills(tmp_path / "skills", skills))])["errors"] == []
    k.skills.embed()
    monkeypatch.setenv(var, value)
    out = k.skills.match("write a commit message", use_llm=False)
    assert [m["name"] for m in out["matched"]] == ["git-commit"] and out["method"] == "keyword"
    assert out["vectors"]["used"] is False and var in out["vectors"]["fallback"]
