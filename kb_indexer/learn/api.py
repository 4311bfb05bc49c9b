"""The learning half of the Python API (mixed into :class:`kb_indexer.api.KnowledgeBase`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from kb_indexer.search.options import QueryOptions

if TYPE_CHECKING:
    from kb_indexer.results import QueryResult


class LearningAPI:
    conn: Any

    def history(self, query_id: int | None = None, limit: int = 10) -> dict:
        from kb_indexer.learn.feedback import history_detail, history_list
        return history_list(self.conn, limit) if query_id is None else history_detail(self.conn, query_id)

    def feedback(self, query_id: int, helpful: list[str], not_helpful: list[str], notes: str | None = None,
                 attempt_id: int | None = None) -> dict:
        from kb_indexer.learn.feedback import record_feedback
        return record_feedback(self.conn, query_id, helpful, not_helpful, notes, attempt_id,
                               resolve_path=self._stored_path)  # type: ignore[attr-defined]

    def feedback_show(self, query_id: int) -> dict:
        from kb_indexer.learn.feedback import feedback_rows, require_query
        q = require_query(self.conn, query_id)
        rows = feedback_rows(self.conn, query_id)
        return {"query_id": query_id, "question": q["question"], "feedback": rows, "count": len(rows)}

    def learn(self, dry_run: bool = False, reprocess: bool = False) -> dict:
        from kb_indexer.learn.apply import learn
        return learn(self.conn, dry_run=dry_run, reprocess=reprocess)

    def learned_list(self, kind: str | None = None, include_removed: bool = False) -> dict:
        from kb_indexer.learn.apply import learned_list
        return learned_list(self.conn, kind, include_removed)

    def learned_remove(self, ids: list[int] | None = None, all_: bool = False) -> dict:
        from kb_indexer.learn.apply import learned_remove
        return learned_remove(self.conn, ids, all_)

    def clear_history(self, before: str | None = None) -> dict:
        from kb_indexer.learn.feedback import clear_history
        return clear_history(self.conn, before)

    def refine(self, query_id: int | None, keywords: list[str], *, last: bool = False,
               options: QueryOptions | None = None) -> QueryResult:
        """Try a recorded query again with other keywords: a new attempt on the same query record (its
        question and context are reused, and its options unless ``options`` are given: see
        :meth:`recorded_options`)."""
        from kb_indexer.errors import UsageError
        from kb_indexer.learn.feedback import last_query_id, require_query

        if last == (query_id is not None):
            raise UsageError("give a QUERY_ID or --last (one of them)")
        if not keywords:
            raise UsageError("refine needs --keywords")
        qid = last_query_id(self.conn) if query_id is None else query_id
        q = require_query(self.conn, qid)
        opts = (options or self.recorded_options(qid)).replace(context=q["context"] or None)
        out = self.query(q["question"], keywords, opts, query_id=qid)  # type: ignore[attr-defined]
        return cast("QueryResult", out)

    def recorded_options(self, query_id: int) -> QueryOptions:
        """The options the recorded query's latest attempt ran with (defaults for what older rows lack)."""
        from kb_indexer.learn.history import recorded_options
        return QueryOptions.from_dict(recorded_options(self.conn, query_id))

    def last_query_id(self) -> int:
        from kb_indexer.learn.feedback import last_query_id
        return last_query_id(self.conn)
