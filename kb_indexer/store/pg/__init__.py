"""The PostgreSQL engine's store modules (psycopg 3, the optional ``postgres`` extra); see kb_indexer.store.engine."""
