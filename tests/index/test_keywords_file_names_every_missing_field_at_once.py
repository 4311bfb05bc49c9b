"""A keywords file a person writes as ``{"keywords": [...]}`` lacks two required fields: sync names both at
once, with what a keywords file holds, instead of one per edit-and-sync round."""

from __future__ import annotations

import json

import pytest

from kb_indexer.errors import ValidationError
from kb_indexer.index.files import validate_keywords_data


def test_every_missing_field_is_named():
    with pytest.raises(ValidationError) as err:
        validate_keywords_data({"keywords": ["docker"]}, "docker.keywords.json")
    assert "missing required fields 'filepath' and 'summary'" in err.value.message
    assert "has filepath, summary and keywords" in err.value.message


def test_one_missing_field_is_named_alone():
    with pytest.raises(ValidationError) as err:
        validate_keywords_data({"filepath": "a.md", "keywords": []}, "a.keywords.json")
    assert "missing required field 'summary' (" in err.value.message


def test_all_three_missing():
    with pytest.raises(ValidationError, match="fields 'filepath', 'summary' and 'keywords'"):
        validate_keywords_data({}, "a.keywords.json")


def test_sync_reports_both_and_indexes_the_note(small):
    kb, root = small
    (root / "docker.md").write_text("# Docker layers\n\nOrder the instructions.\n", encoding="utf-8")
    (root / "docker.keywords.json").write_text(json.dumps({"keywords": ["docker"]}), encoding="utf-8")
    out = kb.sync()
    assert out["added"] == 1
    [error] = out["errors"]
    assert "'filepath' and 'summary'" in error["message"]
