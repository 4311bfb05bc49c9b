"""`skills embed --all` reports the vectors of removed skills it dropped, as a plain `skills embed` does."""

from __future__ import annotations

import pytest

from helpers import write_skills

from kb_indexer.skills.vectors import model_problem

pytestmark = pytest.mark.skipif(model_problem() is not None, reason=f"the local model: {model_problem()}")


@pytest.mark.parametrize("everything", [False, True])
def test_embed_counts_the_vectors_of_removed_skills(small, tmp_path, everything):
    k, _ = small
    skills = {"git-commit": "Write conventional commit messages.", "pdf-forms": "Fill PDF forms."}
    assert k.skills.sync([str(write_skills(tmp_path / "skills", skills))])["errors"] == []
    k.skills.embed()
    k.skills.remove("git-commit")
    report = k.skills.embed(everything)
    assert (report["skills"], report["removed"]) == (1, 1)
