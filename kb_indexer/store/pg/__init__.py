"""The PostgreSQL engine's store modules (psycopg 3, the optional ``postgres`` extra); see kb_indexer.store.engine."""

#: What a NUL character in text becomes on PostgreSQL, which cannot store NUL in a text value (SQLite keeps it):
#: U+FFFD, the replacement character, in what is written and in what is looked up alike.
NUL_STAND_IN = "\ufffd"
