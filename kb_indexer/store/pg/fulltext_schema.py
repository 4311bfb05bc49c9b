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


# A token's place in a document, as stored in ``text_postings.positions``: its column (0-3: title, summary,
# keywords, body) above POSITION_BITS, its index among the column's tokens below (2**30 tokens take over 2 GB of
# text, and a PostgreSQL text value holds at most 1 GB). A phrase occurs where its tokens' codes follow one
# another, so never across two columns.
POSITION_BITS = 30


def _postings_of(doc: int, token_lines: str) -> list[str]:
    """A document's postings as COPY text, from its token lines (one line per column, each token with a space
    before and after it, as m002 stored them in ``documents_text.tokens``): per token its occurrences per
    column, the document's length and its position codes (ascending), as :mod:`fulltext` writes them."""
    places: dict[str, list[int]] = {}
    for column, line in enumerate(token_lines.split("\n")):
        for k, token in enumerate(t for t in line.split(" ") if t):
            places.setdefault(token, []).append((column << POSITION_BITS) | k)
    length = sum(len(codes) for codes in places.values())
    out = []
    for token, codes in places.items():
        n = [0, 0, 0, 0]
        for code in codes:
            n[code >> POSITION_BITS] += 1
        packed = b"".join(code.to_bytes(4, "little") for code in codes).hex()
        out.append(f"{token.translate(COPY_ESCAPES)}\t{doc}\t{n[0]}\t{n[1]}\t{n[2]}\t{n[3]}\t{length}\t\\\\x{packed}\n")
    return out


COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def add_positions(raw: Any, batch: int = 2000) -> None:
    """m004: every posting gets its token's positions in the document (phrases are then matched on the
    postings, where m002 searched each candidate document's token lines: 30-80 ms a phrase of frequent
    tokens at 20,000 documents), and the token lines are dropped. The postings are written again from the
    token lines (the counts and lengths are theirs too), into a new table whose keys are built after it is
    filled: at 20,000 documents an UPDATE of every posting took 317 s. Idempotent."""
    with raw.transaction():   # one transaction (a savepoint inside the migration's)
        lines = raw.execute("SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
                            "AND table_name = 'documents_text' AND column_name = 'tokens'").fetchone()
        if lines is None:
            return
        raw.execute("CREATE TABLE kb_postings (LIKE text_postings)")   # m002's columns, then the positions
        raw.execute("ALTER TABLE kb_postings ADD COLUMN positions BYTEA NOT NULL")
        last = -1
        while True:
            rows = raw.execute("SELECT document_id, tokens FROM documents_text WHERE document_id > %s "
                               "ORDER BY document_id LIMIT %s", (last, batch)).fetchall()
            if not rows:
                break
            with raw.cursor() as cur, cur.copy("COPY kb_postings FROM STDIN") as copy:
                # sorted by token: a token's postings of these documents on few pages (as sync writes them)
                copy.write("".join(sorted(line for doc, text in rows for line in _postings_of(doc, text))))
            last = rows[-1][0]
        raw.execute("DROP TABLE text_postings")
        raw.execute("ALTER TABLE kb_postings RENAME TO text_postings")
        raw.execute("ALTER TABLE text_postings ADD PRIMARY KEY (term, document_id)")
        raw.execute("CREATE INDEX text_postings_document ON text_postings (document_id)")
        raw.execute("ALTER TABLE documents_text DROP COLUMN tokens")
        raw.execute("ANALYZE text_postings")   # a new table: the planner knows nothing of it yet


def create_schema(raw: Any) -> None:
    """The full-text tables (needs ``documents(id)``) as the migrations leave them; idempotent."""
    raw.execute(SCHEMA)
    add_positions(raw)
