"""The PostgreSQL engine's full-text tables (see :mod:`kb_indexer.store.pg.fulltext`, which reads and writes
them). Apart from the ranking code so that the migrations create them without importing numpy and the
tokenizer."""

from __future__ import annotations

from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS documents_text (
    document_id BIGINT PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE,
    title TEXT NOT NULL DEFAULT '',
    summary TEXT NOT NULL DEFAULT '',
    keywords TEXT NOT NULL DEFAULT '',
    body TEXT NOT NULL DEFAULT '',
    tokens TEXT NOT NULL DEFAULT '',
    length INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS text_postings (
    term TEXT NOT NULL,
    document_id BIGINT NOT NULL,
    n_title INTEGER NOT NULL,
    n_summary INTEGER NOT NULL,
    n_keywords INTEGER NOT NULL,
    n_body INTEGER NOT NULL,
    length INTEGER NOT NULL,
    PRIMARY KEY (term, document_id)
);
CREATE INDEX IF NOT EXISTS text_postings_document ON text_postings (document_id);
CREATE TABLE IF NOT EXISTS text_totals (
    id SMALLINT PRIMARY KEY CHECK (id = 1),
    documents BIGINT NOT NULL,
    tokens BIGINT NOT NULL,
    generation BIGINT NOT NULL DEFAULT 0
);
INSERT INTO text_totals (id, documents, tokens) VALUES (1, 0, 0) ON CONFLICT (id) DO NOTHING;
CREATE OR REPLACE FUNCTION text_totals_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE text_totals SET documents = documents + (SELECT count(*) FROM new_rows),
        tokens = tokens + (SELECT coalesce(sum(length), 0) FROM new_rows), generation = generation + 1
        WHERE id = 1;
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION text_totals_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE text_totals SET documents = documents - (SELECT count(*) FROM old_rows),
        tokens = tokens - (SELECT coalesce(sum(length), 0) FROM old_rows), generation = generation + 1
        WHERE id = 1;
    DELETE FROM text_postings WHERE document_id IN (SELECT document_id FROM old_rows);
    RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER documents_text_added AFTER INSERT ON documents_text
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION text_totals_added();
CREATE OR REPLACE TRIGGER documents_text_removed AFTER DELETE ON documents_text
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION text_totals_removed();
"""


def create_schema(raw: Any) -> None:
    """The full-text tables (needs ``documents(id)``); idempotent."""
    raw.execute(SCHEMA)
