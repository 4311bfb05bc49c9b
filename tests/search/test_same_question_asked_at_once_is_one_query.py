"""The history keeps one query per (question, context): agents asking the same question at the same moment,
each with its own connection, get the same query id (one row, one attempt each), on both engines. On
PostgreSQL, where transactions are not one writer at a time, the look-up-then-insert of two agents used to
interleave into two rows."""

from __future__ import annotations

import shutil
import threading

from kb_indexer.api import KnowledgeBase
from tests.conftest import BUNDLED_KB

AGENTS = 8
QUESTION = "reinforcement learning reward"


def test_agents_asking_one_question_at_once_share_one_query(engine_db, tmp_path):
    root = tmp_path / "knowledge-base"
    shutil.copytree(BUNDLED_KB, root)
    kb, _ = KnowledgeBase.init(engine_db, root)
    kb.sync()
    kb.close()
    handles = [KnowledgeBase.open(engine_db) for _ in range(AGENTS)]
    start = threading.Barrier(AGENTS)
    ids: list[int] = []
    errors: list[BaseException] = []

    def ask(handle: KnowledgeBase) -> None:
        try:
            start.wait()
            ids.append(handle.query(QUESTION)["query_id"])
        except BaseException as exc:  # reported below, with the ids
            errors.append(exc)

    threads = [threading.Thread(target=ask, args=(h,)) for h in handles]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for h in handles:
        h.close()
    assert errors == []
    assert len(ids) == AGENTS and len(set(ids)) == 1
    with KnowledgeBase.open(engine_db) as kb:
        assert len(kb.learning.history(ids[0])["attempts"]) == AGENTS
