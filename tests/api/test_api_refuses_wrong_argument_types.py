"""The Python API refuses arguments of the wrong type with bad usage (UsageError, exit 2 in the CLI) naming
the parameter, instead of misreading them (a string as a list of its characters) or failing deep inside
(AttributeError, TypeError)."""

from __future__ import annotations

import pytest

from kb_indexer.api import QueryOptions
from kb_indexer.errors import UsageError


@pytest.fixture
def one_doc(small):
    handle, kbdir = small
    (kbdir / "rl.md").write_text("---\ntitle: RL\nkeywords: [reinforcement learning, RL]\n---\n\nAgents learn.\n")
    handle.sync()
    return handle


def _refused(call, *names: str) -> str:
    with pytest.raises(UsageError) as info:
        call()
    assert all(name in info.value.message for name in names), info.value.message
    return info.value.message


def test_a_string_for_the_keywords_of_a_query_is_refused_not_split_into_letters(one_doc):
    _refused(lambda: one_doc.query("x", "RL"), "keywords", "list of strings")
    assert one_doc.learning.history()["queries"] == []   # nothing recorded


def test_a_string_for_the_keywords_of_a_search_is_refused(one_doc):
    _refused(lambda: one_doc.search("RL"), "keywords")
    assert one_doc.search(["RL"])["count"] == 1


def test_a_keyword_list_holding_a_number_is_refused(one_doc):
    _refused(lambda: one_doc.search(["RL", 3]), "keywords", "int")


def test_options_given_as_a_dict_are_refused_with_the_way_to_build_them(one_doc):
    _refused(lambda: one_doc.query("x", options={"limit": 2}), "options", "QueryOptions")


def test_a_context_that_is_not_text_is_refused_when_the_options_are_built():
    _refused(lambda: QueryOptions(context=5), "context")  # type: ignore[arg-type]


def test_similar_of_no_keyword_is_bad_usage(one_doc):
    _refused(lambda: one_doc.similar(None), "keyword")  # type: ignore[arg-type]


@pytest.mark.parametrize("limit", [-1, 1.5, True])   # 0: all (as query -n 0)
def test_a_history_limit_out_of_range_is_refused(one_doc, limit):
    _refused(lambda: one_doc.learning.history(limit=limit), "limit")


def test_feedback_with_only_helpful_documents(one_doc):
    qid = one_doc.query("how do agents learn?")["query_id"]
    out = one_doc.learning.feedback(qid, helpful=["rl.md"])
    assert one_doc.learning.feedback_show(qid)["count"] == 1, out
    _refused(lambda: one_doc.learning.feedback(qid, helpful="rl.md"), "helpful", "list of strings")


def test_api_int_errors_name_the_parameter_and_the_flag(one_doc):
    _refused(lambda: one_doc.skills.match("turn on the tv", top=0), "top (--top)")
    _refused(lambda: one_doc.context.build("s1", "hi", recent=-1), "recent (--recent)")
    message = _refused(lambda: one_doc.learning.refine(None, ["RL"]), "query_id", "last")
    assert "give a QUERY_ID" not in message
    _refused(lambda: one_doc.skills.match("turn on the tv", min_score=-1), "min_score (--min-score)")
    _refused(lambda: one_doc.context.add("s1", role="robot", text="hi"), "role (--role)")


def test_refine_keywords_must_be_a_list(one_doc):
    qid = one_doc.query("how do agents learn?")["query_id"]
    _refused(lambda: one_doc.learning.refine(qid, "RL"), "keywords")
