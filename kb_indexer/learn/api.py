"""The learning sub-API: ``kb.learning`` of :class:`kb_indexer.api.KnowledgeBase` (built on first use).

    with KnowledgeBase.open() as kb:
        kb.learning.feedback(query_id, helpful=["a.md"], not_helpful=[])
        kb.learning.learn(dry_run=True)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Protocol, cast, overload

from kb_indexer.config import DbTarget
from kb_indexer.errors import UsageError
from kb_indexer.learn import policy as learning_policy
from kb_indexer.learn.apply import learn, learned_list
from kb_indexer.learn.review import approve, learned_remove, reject, remove_asker, restore
from kb_indexer.learn import suggest
from kb_indexer.learn.history import recorded_options
from kb_indexer.learn.feedback import (clear_history, feedback_rows, history_detail, history_list, history_rows,
                                       last_query_id, record_feedback, require_query)
from kb_indexer.learn.report import SECTIONS as SECTIONS, count_line as count_line  # for front ends' reports
from kb_indexer.limits import check_id, check_int_arg, check_strings
from kb_indexer.search.options import QueryOptions
from kb_indexer.store.team import require_role
from kb_indexer.store.connection import transaction
from kb_indexer.store.errors import translated_items, translating
from kb_indexer.store.dbapi import Connection

if TYPE_CHECKING:
    from kb_indexer.results import EvalResult
    from kb_indexer.results import (ClearHistoryResult, FeedbackResult, FeedbackShowResult, HistoryEntry, HistoryResult,
                                    HistoryDetailResult, HistoryListResult, LearnedListResult, LearnedRemoveResult, LearnResult, QueryResult,
                                    LearningPolicy, RemoveAskerResult, ReviewResult, SuggestionsAcceptResult,
                                    SuggestionsDismissResult, SuggestionsResult,
                                    ReportResult)


class Querying(Protocol):
    """What learning needs of the facade: its connection, its path rule and its query (for ``refine``)."""

    conn: Connection
    db_path: DbTarget

    def stored_path(self, path: str) -> str: ...

    def query(self, question: str, keywords: list[str] | None = None, options: QueryOptions | None = None, *,
              query_id: int | None = None) -> Mapping[str, Any]: ...


@translating  # a locked, read-only, full or damaged index raises busy, read_only, disk_full, bad_database
class LearningAPI:
    """Query history, feedback, learning and learned items: history, feedback, feedback_show, learn,
    learned_list, learned_remove, policy, pending, approve, reject, restore, suggestions, accept_suggestions,
    dismiss_suggestions, clear_history, refine, report, last_query_id, evaluate."""

    def __init__(self, kb: Querying) -> None:
        self.kb = kb
        self.conn = kb.conn
        self.db_path = kb.db_path

    @overload
    def history(self, query_id: None = None, limit: int = 10) -> HistoryListResult: ...

    @overload
    def history(self, query_id: int, limit: int = 10) -> HistoryDetailResult: ...

    def history(self, query_id: int | None = None, limit: int = 10) -> HistoryResult:
        """The recent queries (``query_id`` None; the ``limit`` latest, 0: all, as for ``query``), or one query
        with its attempts and feedback."""
        check_int_arg(limit, "limit", 0)
        if query_id is not None:
            check_id(query_id, "query_id")
        return cast("HistoryResult", history_list(self.conn, limit) if query_id is None
                    else history_detail(self.conn, query_id))

    def history_items(self, limit: int = 10) -> Iterator[HistoryEntry]:
        """``history(limit=limit)["queries"]``, one query at a time as they are read: a listing of millions
        (``limit`` 0: all) in the memory of a few (``kbindex history --limit 0``)."""
        check_int_arg(limit, "limit", 0)
        return cast("Iterator[HistoryEntry]", translated_items(history_rows(self.conn, limit), self.db_path))

    def feedback(self, query_id: int, helpful: list[str] | None = None, not_helpful: list[str] | None = None,
                 notes: str | None = None, attempt_id: int | None = None) -> FeedbackResult:
        """Mark documents (paths) of a recorded query helpful or not (at least one mark)."""
        check_id(query_id, "query_id")
        marks = check_strings(helpful, "helpful", optional=True), check_strings(not_helpful, "not_helpful",
                                                                                optional=True)
        return cast("FeedbackResult", record_feedback(self.conn, query_id, *marks, notes, attempt_id,
                                                      resolve_path=self.kb.stored_path))

    def feedback_show(self, query_id: int) -> FeedbackShowResult:
        q = require_query(self.conn, query_id)
        rows = feedback_rows(self.conn, query_id)
        return cast("FeedbackShowResult", {"query_id": query_id, "question": q["question"], "feedback": rows,
                                            "count": len(rows)})

    def learn(self, dry_run: bool = False, reprocess: bool = False) -> LearnResult:
        """Analyse the feedback and apply what it teaches (under the review policy: hold it as pending).
        ``dry_run``: write nothing, and say which recorded questions the items would change, and how
        (``changes``: top results before and after, rank moves)."""
        if dry_run:
            from kb_indexer.learn.preview import preview  # lazy: the search options stay off learn's path
            return cast("LearnResult", preview(self.conn, self.kb.query, reprocess))
        return cast("LearnResult", learn(self.conn, dry_run=False, reprocess=reprocess))

    def learned_list(self, kind: str | None = None, include_removed: bool = False,
                     status: str | None = None) -> LearnedListResult:
        """The active learned items; with ``include_removed`` every item, with ``status`` those of that status
        (active, pending, rejected, removed)."""
        return cast("LearnedListResult", learned_list(self.conn, kind, include_removed, status))

    def policy(self) -> LearningPolicy:
        """The index's learning policy (:mod:`kb_indexer.learn.policy`)."""
        return learning_policy.read(self.conn)

    def set_policy(self, mode: str | None = None, min_askers: int | None = None,
                   max_share: float | None = None) -> LearningPolicy:
        """Set the learning policy (what is given; everything checked before anything is written)."""
        require_role(self.conn, "owner", "learned policy --set")
        with transaction(self.conn):
            return learning_policy.write(self.conn, mode, min_askers, max_share)

    def pending(self) -> LearnedListResult:
        """The items `learn` holds for review under the ``review`` policy."""
        return self.learned_list(status="pending")

    def approve(self, ids: list[int]) -> ReviewResult:
        """Make pending items active: applied as `learn` under ``auto`` would have applied them."""
        require_role(self.conn, "curator", "learned approve")
        return cast("ReviewResult", approve(self.conn, self._ids(ids)))

    def reject(self, ids: list[int]) -> ReviewResult:
        """Mark pending items rejected: later `learn` runs do not propose them again."""
        require_role(self.conn, "curator", "learned reject")
        return cast("ReviewResult", reject(self.conn, self._ids(ids)))

    def restore(self, ids: list[int]) -> ReviewResult:
        """Bring removed items back (applied again)."""
        require_role(self.conn, "curator", "learned restore")
        return cast("ReviewResult", restore(self.conn, self._ids(ids)))

    def suggestions(self, limit: int = 20) -> SuggestionsResult:
        """Typed relations the query log suggests (refine chains, questions helped by the same document), the
        ``limit`` best supported (0: all), for a person to accept or dismiss (:mod:`kb_indexer.learn.suggest`).
        Read-only."""
        check_int_arg(limit, "limit", 0)
        return cast("SuggestionsResult", suggest.suggestions(self.conn, limit))

    def accept_suggestions(self, keys: list[str]) -> SuggestionsAcceptResult:
        """Write suggestions (by key) as a person's typed relations, as `relate` does."""
        require_role(self.conn, "curator", "learned suggestions --accept")
        return cast("SuggestionsAcceptResult", suggest.accept(self.conn, self._keys(keys)))

    def dismiss_suggestions(self, keys: list[str]) -> SuggestionsDismissResult:
        """Record suggestions (by key) as dismissed: they are not suggested again."""
        require_role(self.conn, "curator", "learned suggestions --dismiss")
        return cast("SuggestionsDismissResult", suggest.dismiss(self.conn, self._keys(keys)))

    @staticmethod
    def _keys(keys: list[str]) -> list[str]:
        if not check_strings(keys, "keys"):
            raise UsageError("give suggestion keys (see `kbindex learned suggestions`)")
        return list(keys)

    @staticmethod
    def _ids(ids: list[int]) -> list[int]:
        for i in ids:
            check_id(i, "learned item id")
        return list(ids)

    def learned_remove(self, ids: list[int] | None = None, all_: bool = False) -> LearnedRemoveResult:
        for i in ids or []:
            check_id(i, "learned item id")
        require_role(self.conn, "curator", "learned remove --all" if all_ else "learned remove")
        return cast("LearnedRemoveResult", learned_remove(self.conn, ids, all_))

    def remove_asker(self, name: str) -> RemoveAskerResult:
        """Undo what rests on one asker's feedback (their marks stay, excluded; the rest is learned again)."""
        require_role(self.conn, "curator", "learned remove --asker")
        return cast("RemoveAskerResult", remove_asker(self.conn, name))

    def clear_history(self, before: str | None = None, *, all_: bool = False) -> ClearHistoryResult:
        """Delete recorded queries (with their attempts and feedback, unprocessed feedback included) last asked
        before ``before``, or every one with ``all_``; one of the two must be given (nothing is deleted by
        default)."""
        if (before is None) == (not all_):
            raise UsageError("clear_history deletes the queries last asked before a date, or all of them: give "
                             "before or all_=True, one of them (--before DATE or --all in the CLI)")
        return cast("ClearHistoryResult", clear_history(self.conn, before))

    def refine(self, query_id: int | None, keywords: list[str], *, last: bool = False,
               options: QueryOptions | None = None) -> QueryResult:
        """Try a recorded query again with other keywords: a new attempt on the same query record (its
        question and context are reused, and its options unless ``options`` are given: see
        :meth:`recorded_options`)."""
        if last == (query_id is not None):
            raise UsageError("give query_id or last=True, one of them (QUERY_ID or --last in the CLI)")
        if not check_strings(keywords, "keywords"):
            raise UsageError("refine needs keywords (--keywords in the CLI)")
        qid = last_query_id(self.conn) if query_id is None else query_id
        q = require_query(self.conn, qid)
        opts = (options or self.recorded_options(qid)).replace(context=q["context"] or None)
        return cast("QueryResult", self.kb.query(q["question"], keywords, opts, query_id=qid))

    def recorded_options(self, query_id: int, **changes: Any) -> QueryOptions:
        """The options the recorded query's latest attempt ran with, ``changes`` on top (defaults for what
        older rows lack, and for a recorded value that is not valid: an imported or edited index)."""
        return QueryOptions.from_recorded(recorded_options(self.conn, query_id), **changes)

    def report(self, since: str | None = None, limit: int = 10) -> ReportResult:
        """What the recorded history says (:mod:`kb_indexer.learn.insights`): questions that found nothing,
        asked twice and never marked helpful, most asked, the feedback rate, documents never returned; over
        the attempts since ``since`` (a date or ISO-8601 time; None: all), ``limit`` items per section.
        Read-only."""
        check_int_arg(limit, "limit", 0)
        from kb_indexer.learn.insights import report  # lazy: only the report reads it
        return cast("ReportResult", report(self.conn, since, limit))

    def last_query_id(self) -> int:
        return last_query_id(self.conn)

    def evaluate(self, qrels: str | os.PathLike[str] | None, queries: str | os.PathLike[str] | None = None, *,
                 base: str | QueryOptions | None = None, compare: str | QueryOptions | None = None) -> EvalResult:
        """nDCG@10 and Recall@100 of :meth:`query` (nothing recorded) on judgements: a BEIR ``queries`` file
        (or folder) with its ``qrels``, or ``qrels="feedback"`` (the recorded questions' marks); for ``base``
        (None: the index as it is) and, if given, ``compare`` (``"no-learned"``, ``"method=fulltext"``,
        ``"KEY=VALUE,..."`` on top of the base's options, or QueryOptions), with each question's scores
        (:mod:`kb_indexer.learn.evaluate`)."""
        from kb_indexer.learn.evaluate import run  # lazy: start-up: the judgement readers stay off feedback's path
        return cast("EvalResult", run(self.conn, self.kb.query, qrels, queries, base=base, compare=compare))
