"""What the Python API returns has the shape `kb_indexer.results` declares for it: no key missing, no key
the type does not name, each value of its declared type (checked with pydantic, strict, extra keys
refused), across the commands of an agent's day on the bundled knowledge base. A result that grows a key
shows here until its type says so."""

from __future__ import annotations

from typing import Any

import pytest
from kb_indexer.api import QueryOptions

pydantic = pytest.importorskip("pydantic", reason="pydantic comes with the MCP SDK (the dev extra)")

from kb_indexer import results  # noqa: E402
from kb_indexer.llm.config import EmbedOptions, LLMOptions  # noqa: E402
from tests.helpers import write_skills  # noqa: E402

pytestmark = pytest.mark.both_engines


@pytest.fixture
def check(monkeypatch):
    """``check(ResultType, value)``: ``value`` validated against the type, extra keys refused."""
    for name in results.__all__:
        obj = getattr(results, name)
        if isinstance(obj, type) and hasattr(obj, "__total__"):
            monkeypatch.setattr(obj, "__pydantic_config__", pydantic.ConfigDict(extra="forbid"), raising=False)

    def check(result_type: Any, value: Any) -> None:
        pydantic.TypeAdapter(result_type).validate_python(value, strict=True)
    return check


def test_documents_keywords_and_search(kb, check):
    doc = kb.list_docs()
    check(results.ListDocsResult, doc)
    path = doc["documents"][0]["filepath"]
    check(results.ShowResult, kb.show(path))
    kws = kb.keywords(path)
    check(results.KeywordsResult, kws)
    keyword = kws["keywords"][0]["keyword"]
    check(results.KeywordDocsResult, kb.docs(keyword))
    check(results.KeywordStatsResult, kb.stats(keyword))
    check(results.SimilarResult, kb.similar("reinforcement learning"))
    check(results.SearchResult, kb.search([keyword]))
    check(results.RelateResult, kb.relate("reinforcement learning", "alphago", "application", "games"))
    check(results.UnrelateResult, kb.unrelate("reinforcement learning", "alphago"))
    check(results.ExportSimilaritiesResult, kb.export_similarities())
    check(results.StaleResult, kb.stale())
    check(results.DocumentResult, kb.update(path))
    check(results.RemoveResult, kb.remove(path))
    check(results.DocumentResult, kb.add(path))
    check(results.SyncResult, kb.sync())


def test_query_history_feedback_and_learning(kb, check):
    embed = EmbedOptions(backend="fake-embed")
    check(results.EmbedResult, kb.embeddings.embed(embed=embed))
    check(results.QueryResult, kb.query("what is reinforcement learning", options=QueryOptions(explain=True),
                                        embed=embed))
    out = kb.query("reinforcement learning reward", options=QueryOptions(context="board games"),
                   llm=LLMOptions(backend="fake", retries=0))
    check(results.QueryResult, out)
    qid, path = out["query_id"], out["results"][0]["filepath"]
    check(results.HistoryListResult, kb.learning.history())
    check(results.FeedbackResult, kb.learning.feedback(qid, [path], []))
    check(results.HistoryDetailResult, kb.learning.history(qid))
    check(results.FeedbackShowResult, kb.learning.feedback_show(qid))
    check(results.LearnResult, kb.learning.learn())
    check(results.LearnedListResult, kb.learning.learned_list())
    check(results.QueryResult, kb.learning.refine(qid, ["reinforcement learning"]))
    check(results.SuggestionsResult, kb.learning.suggestions())
    check(results.SuggestionsAcceptResult, kb.learning.accept_suggestions(["nokey"]))
    check(results.SuggestionsDismissResult, kb.learning.dismiss_suggestions(["nokey"]))
    check(results.LearnedRemoveResult, kb.learning.learned_remove(all_=True))
    check(results.ClearHistoryResult, kb.learning.clear_history(all_=True))


def test_database_cache_and_doctor(kb, check):
    check(results.DbStatsResult, kb.db_stats())
    check(results.CacheStatsResult, kb.cache_stats())
    check(results.CacheClearResult, kb.cache_clear())
    exported = kb.export()
    check(results.ExportResult, exported)
    check(results.ImportResult, kb.import_(exported, force=True))
    check(results.DoctorResult, kb.doctor(kb.db_path, roundtrip=False))


def test_skills_context_and_enrich(kb, check):
    folder = write_skills(kb.kb_root.parent / "skills", {"pdf-tools": ("Extract text and tables from PDF files",
                                                                       "Use pdftotext.")})
    check(results.SkillsSyncResult, kb.skills.sync([str(folder)]))
    check(results.SkillsListResult, kb.skills.all())
    check(results.SkillShowResult, kb.skills.show("pdf-tools"))
    check(results.SkillMatchResult, kb.skills.match("extract the tables from this pdf", session="s1"))
    check(results.SkillSessionResult, kb.skills.session("s1"))
    check(results.SkillsLoadResult, kb.skills.load("s1"))
    check(results.SkillSessionResetResult, kb.skills.session("s1", reset=True))
    check(results.SkillRemoveResult, kb.skills.remove("pdf-tools"))
    check(results.ContextAddResult, kb.context.add("c1", role="user", text="how about workspace 5"))
    check(results.ContextBuildResult, kb.context.build("c1", "open it", use_llm=False, record=True))
    check(results.ContextShowResult, kb.context.show("c1"))
    check(results.ContextSessionsResult, kb.context.sessions())
    check(results.ContextCompressResult, kb.context.compress({"messages": [{"role": "user", "content": "hi " * 50}]},
                                                             window=4096, use_llm=False))
    check(results.ContextResetResult, kb.context.reset("c1"))
    check(results.EnrichResult, kb.enrich.documents(all_=True, use_llm=False, dry_run=True))
    check(results.SuggestResult, kb.enrich.suggest_similarities(use_llm=False))
