"""Storage: an SQLite file or a PostgreSQL server (kb_indexer.store.pg), named migrations, and the queries over it."""

from kb_indexer.store.connection import connect, savepoint, transaction
from kb_indexer.store.opening import index_exists, open_db, init_db

__all__ = ["connect", "transaction", "savepoint", "open_db", "init_db", "index_exists"]
