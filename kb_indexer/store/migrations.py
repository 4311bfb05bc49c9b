"""Named schema migrations, applied in order and recorded in the database.

Modelled on the registry pattern of simonw/llm: each migration is a function
registered with ``@migration``; ``_migrations`` records the names applied.
Opening a database applies what is missing (an older index upgrades in place)
and refuses one that records a migration this version does not know (it was
written by a newer kbindex).
"""

from __future__ import annotations

import sqlite3
from typing import Any, Callable

from kb_indexer.store.connection import transaction
from kb_indexer.store.dbapi import Connection
from kb_indexer.store.engine import is_postgres
from kb_indexer.store.provenance import backfill, undo_deleted_learned_relations
from kb_indexer.store.registry import apply, registrar, version

Migration = Callable[[Connection], None]
MIGRATIONS: list[tuple[str, Migration]] = []


migration = registrar(MIGRATIONS)


def run_script(conn: Connection, script: str) -> None:
    """Execute a multi-statement script inside the current transaction.

    (``executescript`` would commit first, breaking atomicity.)
    """
    buf = ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                conn.execute(buf)
            buf = ""
    if buf.strip():
        conn.execute(buf)


@migration
def m001_core(conn: Connection) -> None:
    run_script(conn, """
    CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value TEXT
    );
    CREATE TABLE documents (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        filepath TEXT UNIQUE NOT NULL,
        title TEXT,
        summary TEXT,
        content_hash TEXT,
        stat_sig TEXT,
        keywords_file TEXT,
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now')),
        updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now'))
    );
    CREATE TABLE keywords (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        keyword TEXT UNIQUE NOT NULL,
        display TEXT NOT NULL,
        category TEXT,
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now'))
    );
    CREATE TABLE document_keywords (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        keyword_id INTEGER NOT NULL REFERENCES keywords(id) ON DELETE CASCADE,
        category TEXT,
        source TEXT NOT NULL DEFAULT 'file',
        UNIQUE(document_id, keyword_id)
    );
    CREATE INDEX idx_document_keywords_keyword ON document_keywords(keyword_id);
    CREATE TABLE keyword_similarities (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        keyword_id_1 INTEGER NOT NULL REFERENCES keywords(id) ON DELETE CASCADE,
        keyword_id_2 INTEGER NOT NULL REFERENCES keywords(id) ON DELETE CASCADE,
        similarity_type TEXT NOT NULL CHECK (similarity_type IN (
            'synonym', 'abbreviation', 'related_concept', 'broader', 'narrower',
            'contrast', 'application', 'prerequisite', 'component')),
        context TEXT NOT NULL,
        score REAL NOT NULL DEFAULT 0.5 CHECK (score >= 0 AND score <= 1),
        directional INTEGER NOT NULL DEFAULT 0 CHECK (directional IN (0, 1)),
        source_keyword_id INTEGER REFERENCES keywords(id) ON DELETE CASCADE,
        origin TEXT NOT NULL DEFAULT 'manual',
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now')),
        UNIQUE(keyword_id_1, keyword_id_2, similarity_type),
        CHECK (keyword_id_1 < keyword_id_2),
        CHECK ((directional = 0 AND source_keyword_id IS NULL) OR
               (directional = 1 AND source_keyword_id IS NOT NULL AND
                source_keyword_id IN (keyword_id_1, keyword_id_2)))
    );
    CREATE INDEX idx_similarities_kw2 ON keyword_similarities(keyword_id_2);
    """)


@migration
def m002_fulltext(conn: Connection) -> None:
    # The FTS row of a document has rowid = documents.id and is rewritten by
    # kb_indexer.store.documents in the same transaction as the document.
    run_script(conn, """
    CREATE VIRTUAL TABLE documents_fts USING fts5(
        title, summary, keywords, body,
        tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER documents_fts_delete AFTER DELETE ON documents BEGIN
        DELETE FROM documents_fts WHERE rowid = old.id;
    END;
    """)


@migration
def m003_history(conn: Connection) -> None:
    run_script(conn, """
    CREATE TABLE queries (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        question TEXT NOT NULL,
        context TEXT NOT NULL DEFAULT '',
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now')),
        last_attempted_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now'))
    );
    CREATE INDEX idx_queries_created ON queries(created_at DESC);
    CREATE TABLE query_attempts (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        query_id INTEGER NOT NULL REFERENCES queries(id) ON DELETE CASCADE,
        keywords TEXT NOT NULL,
        expand_depth INTEGER DEFAULT 1,
        threshold REAL DEFAULT 0.7,
        method TEXT,
        result_count INTEGER DEFAULT 0,
        top_results TEXT,
        expansions TEXT,
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now'))
    );
    CREATE INDEX idx_query_attempts_query ON query_attempts(query_id);
    CREATE TABLE query_feedback (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        query_id INTEGER NOT NULL REFERENCES queries(id) ON DELETE CASCADE,
        attempt_id INTEGER REFERENCES query_attempts(id) ON DELETE SET NULL,
        filepath TEXT NOT NULL,
        helpful INTEGER NOT NULL CHECK (helpful IN (0, 1)),
        notes TEXT,
        processed INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now')),
        UNIQUE(query_id, filepath)
    );
    CREATE INDEX idx_query_feedback_processed ON query_feedback(processed);
    """)


@migration
def m010_llm_cache(conn: Connection) -> None:
    # Answers of LLM calls, keyed by (backend, model, task, prompt hash, schema hash);
    # see kb_indexer.llm.cache. Not exported (export skips this table).
    run_script(conn, """
    CREATE TABLE llm_cache (
        key TEXT PRIMARY KEY,
        backend TEXT NOT NULL,
        model TEXT NOT NULL,
        task TEXT NOT NULL,
        prompt_hash TEXT NOT NULL,
        schema_hash TEXT NOT NULL,
        response TEXT NOT NULL,
        hits INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now')),
        last_hit_at TEXT
    );
    CREATE INDEX idx_llm_cache_task ON llm_cache(task);
    """)


@migration
def m020_retrieval(conn: Connection) -> None:
    # `kbindex query` finds its query row by (question, context) on every call;
    # `options` keeps the rest of an attempt's settings as JSON (see kb_indexer.learn.history).
    run_script(conn, """
    CREATE INDEX idx_queries_question_context ON queries(question, context);
    ALTER TABLE query_attempts ADD COLUMN options TEXT;
    """)


@migration
def m030_learning(conn: Connection) -> None:
    # What `kbindex learn` derived from feedback, with provenance; removed items stay as
    # status 'removed' so that they are not learned again.
    run_script(conn, """
    CREATE TABLE learned_items (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        key TEXT UNIQUE NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('association', 'keyword', 'similarity', 'score')),
        status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'removed')),
        document_id INTEGER REFERENCES documents(id) ON DELETE CASCADE,
        similarity_id INTEGER REFERENCES keyword_similarities(id) ON DELETE SET NULL,
        weight REAL,
        size INTEGER,
        previous_score REAL,
        detail TEXT NOT NULL,
        feedback_ids TEXT NOT NULL DEFAULT '[]',
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now')),
        updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now'))
    );
    CREATE TABLE learned_terms (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        learned_id INTEGER NOT NULL REFERENCES learned_items(id) ON DELETE CASCADE,
        term TEXT NOT NULL,
        UNIQUE(term, learned_id)
    );
    ALTER TABLE document_keywords ADD COLUMN weight REAL NOT NULL DEFAULT 1.0;
    ALTER TABLE document_keywords ADD COLUMN learned_id INTEGER REFERENCES learned_items(id) ON DELETE CASCADE;
    """)


@migration
def m040_similarity_files(conn: Connection) -> None:
    # Which similarities.json files (by path relative to the KB root's parent, as in ``origin``) list a
    # relation. ``origin`` says who last wrote its values; a relation stays while any file lists it, and
    # goes when none does any more unless a person (relate, import-similarities) or learning wrote it
    # last. ``similarity_file_entries`` remembers each file entry as last imported, so that re-reading a
    # file applies only the entries that changed. See kb_indexer.index.similarity_sync.
    run_script(conn, """
    CREATE TABLE similarity_files (
        similarity_id INTEGER NOT NULL REFERENCES keyword_similarities(id) ON DELETE CASCADE,
        file TEXT NOT NULL,
        PRIMARY KEY (similarity_id, file)
    );
    CREATE INDEX idx_similarity_files_file ON similarity_files(file);
    CREATE TABLE similarity_file_entries (
        file TEXT NOT NULL,
        entry TEXT NOT NULL,
        entry_hash TEXT NOT NULL,
        PRIMARY KEY (file, entry)
    );
    INSERT INTO similarity_files (similarity_id, file)
        SELECT id, substr(origin, 6) FROM keyword_similarities WHERE origin LIKE 'file:%';
    """)


@migration
def m050_provenance(conn: Connection) -> None:
    # Provenance as explicit columns instead of the ``origin`` string (see kb_indexer.store.provenance):
    # origin_kind/origin_file/learned_id on relations, the feedback rows behind each learned item, and a
    # tombstone for each relation a person deleted, so that neither sync nor learn re-derives it.
    # similarity_file_entries joined m040 after indexes had already been built by an m040 without it:
    # such an index gets the table here.
    run_script(conn, """
    CREATE TABLE IF NOT EXISTS similarity_file_entries (
        file TEXT NOT NULL,
        entry TEXT NOT NULL,
        entry_hash TEXT NOT NULL,
        PRIMARY KEY (file, entry)
    );
    ALTER TABLE keyword_similarities ADD COLUMN origin_kind TEXT
        CHECK (origin_kind IN ('file', 'person', 'import', 'learned'));
    ALTER TABLE keyword_similarities ADD COLUMN origin_file TEXT;
    ALTER TABLE keyword_similarities ADD COLUMN learned_id INTEGER
        REFERENCES learned_items(id) ON DELETE SET NULL;
    CREATE TABLE similarity_tombstones (
        keyword_id_1 INTEGER NOT NULL REFERENCES keywords(id) ON DELETE CASCADE,
        keyword_id_2 INTEGER NOT NULL REFERENCES keywords(id) ON DELETE CASCADE,
        similarity_type TEXT NOT NULL,
        deleted_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now')),
        PRIMARY KEY (keyword_id_1, keyword_id_2, similarity_type)
    );
    CREATE TABLE learned_feedback (
        learned_id INTEGER NOT NULL REFERENCES learned_items(id) ON DELETE CASCADE,
        feedback_id INTEGER NOT NULL,
        PRIMARY KEY (learned_id, feedback_id)
    );
    CREATE INDEX idx_learned_feedback_feedback ON learned_feedback(feedback_id);
    """)
    backfill(conn)
    undo_deleted_learned_relations(conn)


@migration
def m060_sync_state(conn: Connection) -> None:
    # The stale check's quick mode stats the most recently indexed documents, and looks up the documents
    # given their keywords file with `add --keywords` (kb_indexer.index.stale; the WHERE clause is the same
    # text as its query's, so that the planner uses this partial index instead of scanning every row).
    run_script(conn, """
    CREATE INDEX idx_documents_updated ON documents(updated_at);
    CREATE INDEX idx_documents_explicit_keywords ON documents(filepath) WHERE keywords_file IS NOT NULL
        AND keywords_file NOT IN (substr(filepath, 1, length(filepath) - 3) || '.keywords.json',
                                  substr(filepath, 1, length(filepath) - 9) || '.keywords.json');
    """)


@migration
def m070_skills(conn: Connection) -> None:
    # Agent Skills (``<dir>/<name>/SKILL.md``; see kb_indexer.skills). ``terms`` holds the matcher's
    # tokens of name, description and body (JSON, recomputed when the tokenizer version changes), so a
    # match reads them instead of tokenising the catalog. ``skill_dirs`` remembers the directories given
    # to `skills sync`. Sessions (`skills match --session`) keep one row per session and one per
    # session and skill; their messages let eviction ask whether a skill is still relevant. Derived from
    # the skill folders and per conversation: not exported (see kb_indexer.store.export).
    run_script(conn, """
    CREATE TABLE skills (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT UNIQUE NOT NULL,
        description TEXT NOT NULL,
        metadata TEXT NOT NULL DEFAULT '{}',
        body TEXT NOT NULL DEFAULT '',
        folder TEXT NOT NULL,
        source_dir TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        terms TEXT NOT NULL DEFAULT '{}',
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now')),
        updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now'))
    );
    CREATE INDEX idx_skills_source_dir ON skills(source_dir);
    CREATE TABLE skill_dirs (
        path TEXT PRIMARY KEY,
        added_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now')),
        synced_at TEXT
    );
    CREATE TABLE skill_sessions (
        id TEXT PRIMARY KEY,
        turn INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now')),
        updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now'))
    );
    CREATE TABLE skill_session_messages (
        session_id TEXT NOT NULL REFERENCES skill_sessions(id) ON DELETE CASCADE,
        turn INTEGER NOT NULL,
        message TEXT NOT NULL,
        PRIMARY KEY (session_id, turn)
    );
    CREATE TABLE skill_session_skills (
        session_id TEXT NOT NULL REFERENCES skill_sessions(id) ON DELETE CASCADE,
        skill_name TEXT NOT NULL,
        last_matched_turn INTEGER NOT NULL,
        match_count INTEGER NOT NULL DEFAULT 0,
        priority TEXT NOT NULL DEFAULT 'active' CHECK (priority IN ('active', 'relevant')),
        loaded INTEGER NOT NULL DEFAULT 1 CHECK (loaded IN (0, 1)),
        PRIMARY KEY (session_id, skill_name)
    );
    """)


@migration
def m080_context(conn: Connection) -> None:
    # Conversation sessions (`kbindex context`; see kb_indexer.context.store): agents drive a chat turn
    # by turn from separate processes, so the messages and the rolling summary live here. ``seq`` orders
    # a session's messages (given out inside the adding transaction, so two processes adding at once
    # both land). ``summary_through`` is the last seq the rolling summary covers. Per conversation and
    # reset by design (chat-context-strategy.md, "Reset Behavior"): not exported.
    run_script(conn, """
    CREATE TABLE context_sessions (
        id TEXT PRIMARY KEY,
        summary TEXT NOT NULL DEFAULT '',
        summary_source TEXT CHECK (summary_source IN ('llm', 'extractive', 'truncation')),
        summary_through INTEGER NOT NULL DEFAULT 0,
        summary_updated_at TEXT,
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now')),
        updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now'))
    );
    CREATE TABLE context_messages (
        session_id TEXT NOT NULL REFERENCES context_sessions(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
        content TEXT NOT NULL,
        normalised TEXT,
        is_question INTEGER NOT NULL DEFAULT 0 CHECK (is_question IN (0, 1)),
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
        PRIMARY KEY (session_id, seq)
    );
    """)


@migration
def m090_embeddings(conn: Connection) -> None:
    # Dense vectors for semantic and hybrid search (see kb_indexer.store.vectors). One row per embedding
    # model (backend + model name, with its dimension: vectors of two models never mix); per model and
    # document, what text the vectors were made from (``source_hash``: incremental `kbindex embed`) and
    # the chunks' unit vectors (float32 BLOBs). ``embedding_matrix`` packs one model's vectors into one
    # contiguous BLOB that a query reads in one go; it is valid while its ``generation`` equals the
    # model's, which the triggers bump on every change of the model's documents (a deleted document
    # included: its rows go by cascade). Derived from the documents: not exported.
    run_script(conn, """
    CREATE TABLE embedding_models (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        backend TEXT NOT NULL,
        model TEXT NOT NULL,
        dim INTEGER NOT NULL CHECK (dim > 0),
        generation INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now')),
        updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now')),
        UNIQUE (backend, model)
    );
    CREATE TABLE embedding_docs (
        model_id INTEGER NOT NULL REFERENCES embedding_models(id) ON DELETE CASCADE,
        document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        source_hash TEXT NOT NULL,
        chunks INTEGER NOT NULL,
        truncated INTEGER NOT NULL DEFAULT 0,
        embedded_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now')),
        PRIMARY KEY (model_id, document_id)
    );
    CREATE INDEX idx_embedding_docs_document ON embedding_docs(document_id);
    CREATE TABLE embedding_chunks (
        model_id INTEGER NOT NULL,
        document_id INTEGER NOT NULL,
        chunk_no INTEGER NOT NULL,
        vector BLOB NOT NULL,
        PRIMARY KEY (model_id, document_id, chunk_no),
        FOREIGN KEY (model_id, document_id) REFERENCES embedding_docs(model_id, document_id) ON DELETE CASCADE
    );
    CREATE TABLE embedding_matrix (
        model_id INTEGER PRIMARY KEY REFERENCES embedding_models(id) ON DELETE CASCADE,
        generation INTEGER NOT NULL,
        rows INTEGER NOT NULL,
        doc_ids BLOB NOT NULL,
        vectors BLOB NOT NULL
    );
    CREATE TRIGGER embedding_docs_added AFTER INSERT ON embedding_docs BEGIN
        UPDATE embedding_models SET generation = generation + 1 WHERE id = new.model_id;
    END;
    CREATE TRIGGER embedding_docs_removed AFTER DELETE ON embedding_docs BEGIN
        UPDATE embedding_models SET generation = generation + 1 WHERE id = old.model_id;
    END;
    CREATE TRIGGER embedding_docs_changed AFTER UPDATE ON embedding_docs BEGIN
        UPDATE embedding_models SET generation = generation + 1 WHERE id = new.model_id;
    END;
    """)


@migration
def m100_sparse(conn: Connection) -> None:
    # A sparse (inverted) index of the full-text rows that a large knowledge base answers full-text
    # queries from (see kb_indexer.store.sparse): per segment and term, the documents and their weighted
    # term frequencies in one BLOB; which segment holds each document's live postings and its length in
    # ``sparse_state``; ``sparse_pairs``: the two-token phrases (known keywords) indexed like terms, from
    # which segment on. ``fulltext_log`` lists every document whose full-text row changed (the store
    # functions that write the row log it; a deleted document by this trigger), so the index is brought up
    # to date incrementally. Derived from documents_fts: not exported.
    # A question naming a popular tag reads tens of thousands of document_keywords rows by keyword: the index
    # by keyword now covers what a query reads of them (document, weight; the row id is in every index).
    run_script(conn, """
    DROP INDEX idx_document_keywords_keyword;
    CREATE INDEX idx_document_keywords_keyword ON document_keywords(keyword_id, document_id, weight);
    CREATE TABLE fulltext_log (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        document_id INTEGER NOT NULL
    );
    CREATE TRIGGER fulltext_log_delete AFTER DELETE ON documents BEGIN
        INSERT INTO fulltext_log (document_id) VALUES (old.id);
    END;
    CREATE TABLE sparse_segments (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        documents INTEGER NOT NULL,
        postings INTEGER NOT NULL,
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now'))
    );
    CREATE TABLE sparse_postings (
        id INTEGER PRIMARY KEY,
        term TEXT NOT NULL,
        segment INTEGER NOT NULL REFERENCES sparse_segments(id) ON DELETE CASCADE,
        data BLOB NOT NULL
    );
    CREATE UNIQUE INDEX idx_sparse_postings_term ON sparse_postings(term, segment);
    CREATE INDEX idx_sparse_postings_segment ON sparse_postings(segment);
    CREATE TABLE sparse_pairs (
        pair TEXT PRIMARY KEY,
        since INTEGER NOT NULL
    );
    CREATE TABLE sparse_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        format TEXT NOT NULL,
        fold_seq INTEGER NOT NULL,
        structure BLOB,
        documents INTEGER NOT NULL,
        tokens INTEGER NOT NULL,
        owner BLOB NOT NULL,
        lengths BLOB NOT NULL,
        generation INTEGER NOT NULL DEFAULT 0,
        updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now'))
    );
    """)


@migration
def m110_document_text_hash(conn: Connection) -> None:
    # The hash of a document's markdown text alone (sha1 of its bytes and a NUL; ``content_hash`` also
    # covers its keywords file): sync pairs a file that vanished with a new file of the same text, so a
    # renamed document keeps its id and what hangs off it (see kb_indexer.index.renames). A document without
    # a keywords file has the same value in both; the others get theirs when sync next reads them.
    run_script(conn, """
    ALTER TABLE documents ADD COLUMN text_hash TEXT;
    UPDATE documents SET text_hash = content_hash WHERE keywords_file IS NULL;
    """)



@migration
def m120_history_order(conn: Connection) -> None:
    # `history` lists the queries by their last attempt, `clear-history --before` picks them by it; deleting
    # attempts looks up the feedback that names them (ON DELETE SET NULL).
    run_script(conn, """
    CREATE INDEX idx_queries_last_attempted ON queries(last_attempted_at, id);
    CREATE INDEX idx_query_feedback_attempt ON query_feedback(attempt_id);
    """)


@migration
def m130_authored(conn: Connection) -> None:
    # Who asked (kb_indexer.store.team): every query, attempt and mark records its asker; rows written before
    # migrate as 'unknown'. Marks are kept per asker (one member's mark never overwrites another's), which
    # changes query_feedback's unique key: SQLite rebuilds the table, keeping its ids. ``excluded`` marks
    # feedback that learning no longer counts. A relation a person wrote (or deleted) names its author.
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'query_feedback'").fetchone()
    counter = int(row[0]) if row else 0
    run_script(conn, """
    ALTER TABLE queries ADD COLUMN asker TEXT NOT NULL DEFAULT 'unknown';
    ALTER TABLE query_attempts ADD COLUMN asker TEXT NOT NULL DEFAULT 'unknown';
    ALTER TABLE keyword_similarities ADD COLUMN author TEXT;
    ALTER TABLE similarity_tombstones ADD COLUMN author TEXT;
    CREATE TABLE query_feedback_authored (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        query_id INTEGER NOT NULL REFERENCES queries(id) ON DELETE CASCADE,
        attempt_id INTEGER REFERENCES query_attempts(id) ON DELETE SET NULL,
        filepath TEXT NOT NULL,
        helpful INTEGER NOT NULL CHECK (helpful IN (0, 1)),
        notes TEXT,
        processed INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now')),
        asker TEXT NOT NULL DEFAULT 'unknown',
        excluded INTEGER NOT NULL DEFAULT 0 CHECK (excluded IN (0, 1)),
        UNIQUE(query_id, filepath, asker)
    );
    INSERT INTO query_feedback_authored (id, query_id, attempt_id, filepath, helpful, notes, processed, created_at)
        SELECT id, query_id, attempt_id, filepath, helpful, notes, processed, created_at FROM query_feedback;
    DROP TABLE query_feedback;
    ALTER TABLE query_feedback_authored RENAME TO query_feedback;
    CREATE INDEX idx_query_feedback_processed ON query_feedback(processed);
    CREATE INDEX idx_query_feedback_attempt ON query_feedback(attempt_id);
    CREATE INDEX idx_queries_asker ON queries(asker, last_attempted_at, id);
    CREATE INDEX idx_query_attempts_asker ON query_attempts(asker, query_id);
    """)
    # the AUTOINCREMENT counter goes on from the old table's (ids of deleted rows are not given out again)
    conn.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'query_feedback'", (counter,))
    conn.execute("INSERT INTO sqlite_sequence (name, seq) SELECT 'query_feedback', ? WHERE ? > 0 AND NOT EXISTS "
                 "(SELECT 1 FROM sqlite_sequence WHERE name = 'query_feedback')", (counter, counter))


@migration
def m140_review(conn: Connection) -> None:
    # The learning policy (team_settings: kb_indexer.learn.policy) and the review queue: a learned item can be
    # 'pending' (recorded, never applied: it changes no ranking) or 'rejected' (not proposed again), and records
    # who removed it or decided on it, and when. learned_items' CHECK constraint is rebuilt in place: rows and ids
    # stay, and so do the tables that reference it (a copy-and-drop would cascade to them with foreign keys on).
    old = "CHECK (status IN ('active', 'removed'))"
    new = "CHECK (status IN ('active', 'removed', 'pending', 'rejected'))"
    version = conn.execute("PRAGMA schema_version").fetchone()[0]
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute("UPDATE sqlite_master SET sql = replace(sql, ?, ?) WHERE type = 'table' AND name = 'learned_items'",
                 (old, new))
    conn.execute(f"PRAGMA schema_version = {int(version) + 1}")
    conn.execute("PRAGMA writable_schema = OFF")
    run_script(conn, """
    CREATE TABLE team_settings (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    ALTER TABLE learned_items ADD COLUMN removed_by TEXT;
    ALTER TABLE learned_items ADD COLUMN removed_at TEXT;
    ALTER TABLE learned_items ADD COLUMN decided_by TEXT;
    ALTER TABLE learned_items ADD COLUMN decided_at TEXT;
    CREATE INDEX idx_learned_items_status ON learned_items(status);
    """)


@migration
def m150_suggestions(conn: Connection) -> None:
    # Relations the query log suggests (kb_indexer.learn.suggest) that a person dismissed: not suggested again.
    run_script(conn, """
    CREATE TABLE suggestion_dismissals (
        key TEXT PRIMARY KEY,
        keyword1 TEXT NOT NULL,
        keyword2 TEXT NOT NULL,
        similarity_type TEXT NOT NULL,
        dismissed_by TEXT NOT NULL,
        dismissed_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now'))
    );
    """)


@migration
def m160_search_rules(conn: Connection) -> None:
    # Pin and hide rules (kb_indexer.search.rules): a curator's decision that a question whose terms include a
    # rule's terms shows a document first (pin) or not at all (hide). ``terms``: the JSON list of the pattern's
    # normalised terms (what questions are matched by); the document is named by its path, as feedback names it.
    run_script(conn, """
    CREATE TABLE search_rules (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        action TEXT NOT NULL CHECK (action IN ('pin', 'hide')),
        pattern TEXT NOT NULL,
        terms TEXT NOT NULL,
        filepath TEXT NOT NULL,
        reason TEXT,
        author TEXT NOT NULL DEFAULT 'unknown',
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now')),
        UNIQUE(action, terms, filepath)
    );
    """)


def _applied(conn: Connection) -> list[str] | None:
    if is_postgres(conn):
        return _pg().applied(conn)  # type: ignore[no-any-return,unused-ignore]
    has = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'"
    ).fetchone()
    if not has:
        return None
    return [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY rowid")]


def known_migrations(conn: Connection) -> list[str]:
    """The names of the migrations this kbindex knows for the connection's engine, in order."""
    return [name for name, _ in (_pg().MIGRATIONS if is_postgres(conn) else MIGRATIONS)]


def schema_version(conn: Connection) -> dict[str, Any]:
    if is_postgres(conn):
        return _pg().schema_version(conn)  # type: ignore[no-any-return]
    return version(_applied(conn) or [], MIGRATIONS)


def migrate(conn: Connection) -> list[str]:
    """Apply every registered migration the database lacks, in one transaction."""
    with transaction(conn):
        conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, "
                     "applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now')))")
        return apply(conn, MIGRATIONS, set(_applied(conn) or []))


def _pg() -> Any:
    from kb_indexer.store.pg import migrations  # lazy: psycopg, only on the PostgreSQL engine
    return migrations
