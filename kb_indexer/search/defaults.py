"""Query defaults, in a module of their own so the CLI can show them without importing the search code."""

DEFAULT_THRESHOLD = 0.35   # minimum expansion weight (see kb_indexer.search.expansion)
DEFAULT_DEPTH = 1          # similarity hops
MAX_DEPTH = 5
DEFAULT_LIMIT = 10
MAX_LIMIT = 1000
SEARCH_DEFAULT_LIMIT = 50  # kbindex search: results shown unless --limit says otherwise (0: all)
