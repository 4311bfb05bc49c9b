"""Method selection: identifier detection table (memory-search-method-selection.md)."""

from __future__ import annotations

import pytest

from kb_indexer.errors import UsageError
from kb_indexer.search.method import choose_method, classify, find_identifiers

IDENTIFIER_QUERIES = [
    # query, identifier, kind
    ("Have I used useState before?", "useState", "camelCase"),
    ("handleClick fires twice", "handleClick", "camelCase"),
    ("MyComponent props", "MyComponent", "PascalCase"),
    ("XMLHttpRequest timeout", "XMLHttpRequest", "PascalCase"),
    ("rename snake_case_name", "snake_case_name", "snake_case"),
    ("MAX_RETRIES setting", "MAX_RETRIES", "snake_case"),
    ("what does __init__ do", "__init__", "snake_case"),
    ("App.tsx crashed", "App.tsx", "file name"),
    ("edit index.js please", "index.js", "file name"),
    ("the package.json scripts.", "package.json", "file name"),
    ("src/kb_indexer/api.py", "src/kb_indexer/api.py", "file name"),
    ("secrets in .env", ".env", "file name"),
    ("ENOENT when opening", "ENOENT", "error code"),
    ("EACCES on write", "EACCES", "error code"),
    ("ERR_MODULE_NOT_FOUND again", "ERR_MODULE_NOT_FOUND", "error code"),
    ("SIGSEGV in worker", "SIGSEGV", "error code"),
    ("SIGUSR1 handler never runs", "SIGUSR1", "error code"),
    ("crash in parser.C", "parser.C", "file name"),
    ("0xC0000005 crash", "0xC0000005", "error code"),
    ("flake8 says E501", "E501", "code"),
    ("TypeError: cannot read", "TypeError", "error name"),
    ("ValueError raised", "ValueError", "error name"),
    ("NullPointerException", "NullPointerException", "error name"),
    ("got a 404 from the API", "404", "status code"),
    ("503 from upstream", "503", "status code"),
    ("os.path.join on windows", "os.path.join", "dotted name"),
    ("why is fetchData() slow", "fetchData()", "function call"),
    ("run `kbindex sync` first", "kbindex sync", "code span"),
    ("이전에 useState 사용한 적 있어?", "useState", "camelCase"),
    ("App.tsx 파일 수정한 적 있어?", "App.tsx", "file name"),
    ("TypeError 에러 해결한 적 있어?", "TypeError", "error name"),
]

CONCEPT_QUERIES = [
    "reinforcement learning",
    "How do agents learn from trial and error?",
    "RL vs LLM for AGI",
    "What is MCTS?",
    "e.g. supervised learning, i.e. labels",
    "state-of-the-art results in 2024",
    "Python 3.11 release notes",
    "PhD thesis on RL",
    "GPT-4 and Q-learning",
    # English words and initials shaped like identifiers (held-out NPL and CACM questions)
    "ACTIVE CONSTANT VOLTAGE TRANSFORMER FOR SIGNAL DISTRIBUTION",
    "SIGMA and SIGNALS in control theory",
    "An article on the subject is H.C. Andrews and C.L. Patterson, American Mathematical Monthly",
    "the U.S. census of 1960",
    "",
    "   ",
    "😀 🔥",
]


@pytest.mark.parametrize("query,ident,kind", IDENTIFIER_QUERIES)
def test_identifier_queries_pick_keyword(query, ident, kind):
    choice = choose_method("auto", query)
    assert choice.method == "keyword"
    assert (ident, kind) in [(i.text, i.kind) for i in choice.identifiers]
    assert ident in choice.reason


@pytest.mark.parametrize("query", CONCEPT_QUERIES)
def test_concept_queries_pick_hybrid(query):
    choice = choose_method("auto", query)
    assert choice.method == "hybrid", [(i.text, i.kind) for i in choice.identifiers]
    assert choice.identifiers == []
    assert "hybrid" in choice.reason


# memory-search-method-selection.md, "semantic" and "hybrid" examples, and English cues.
SEMANTIC_QUERIES = [
    ("상태 관리에 대해 작업한 적 있어?", "에 대해"),
    ("API 호출하는 방법 찾아줘", "방법"),
    ("인증 관련 코드 있어?", "관련"),
    ("비슷한 기능 구현한 적 있어?", "비슷한"),
    ("로그인은 어떻게 처리했지?", "어떻게"),
    ("200 documents about 3 topics", "about"),
    ("anything related to caching", "related to"),
    ("how to handle retries with backoff", "how to"),
    ("similar approaches for the HTTP client", "similar"),
]
MIXED_QUERIES = [
    "chroma 관련 작업 찾아줘",                 # the design: an exact term beside the cue -> hybrid
    "papers about Monte Carlo tree search",   # a proper noun beside the cue
    "이전에 작업한 거 보여줘",                  # no cue
]


@pytest.mark.parametrize("query,cue", SEMANTIC_QUERIES)
def test_semantic_cues_pick_semantic(query, cue):
    choice = choose_method("auto", query)
    assert choice.method == "semantic" and repr(cue) in choice.reason


@pytest.mark.parametrize("query", MIXED_QUERIES)
def test_cues_beside_exact_terms_or_no_cue_pick_hybrid(query):
    assert choose_method("auto", query).method == "hybrid"


def test_sqlite_is_the_keyword_method():
    choice = choose_method("sqlite", "anything")
    assert choice.method == "keyword" and choice.requested == "keyword"


def test_identifier_in_keywords_counts():
    assert choose_method("auto", "how do I fix this", ["useEffect"]).method == "keyword"


@pytest.mark.parametrize("method", ["keyword", "fulltext", "hybrid"])
def test_explicit_method_is_kept(method):
    choice = choose_method(method, "useState hook")
    assert choice.method == method and choice.requested == method
    assert "requested" in choice.reason


def test_unknown_method():
    with pytest.raises(UsageError):
        choose_method("vector", "x")


def test_classify_plain_words_are_not_identifiers():
    for word in ("learning", "RL", "LLM", "MCTS", "e.g", "i.e", "3.11", "2024", "200", "A", "Go", "PhD", "GPT-4"):
        assert classify(word) is None, word


def test_find_identifiers_dedupes_in_order():
    ids = find_identifiers("useState and useState and App.tsx", "ENOENT")
    assert [i.text for i in ids] == ["useState", "App.tsx", "ENOENT"]
