"""Query defaults and the similarity types, in a module of their own (a shared one, below every layer) so
the front ends can show them without importing the search code or the store.

Two thresholds, two meanings:

- ``DEFAULT_MIN_WEIGHT``: the minimum expansion weight (type weight x relation score x hop decay x
  context fit) a related keyword needs to be expanded to (``query --min-weight``; ``--threshold`` is
  its older name, kept);
- ``DEFAULT_CONTEXT_THRESHOLD``: the design's context-match threshold (``--context-threshold``): a
  relation whose context-match score (LLM or lexical, 0..1) reaches it fits the user's context
  (``similar --user-context`` keeps it; ``query --context`` keeps its full weight).
"""

DEFAULT_MIN_WEIGHT = 0.35          # minimum expansion weight (see kb_indexer.search.expansion)
DEFAULT_THRESHOLD = DEFAULT_MIN_WEIGHT   # the older name of the minimum expansion weight
DEFAULT_CONTEXT_THRESHOLD = 0.7    # context_match_score at which a relation fits the user's context
DEFAULT_DEPTH = 1          # similarity hops
MAX_DEPTH = 5
DEFAULT_LIMIT = 10
MAX_LIMIT = 1000
SEARCH_DEFAULT_LIMIT = 50  # kbindex search: results shown unless --limit says otherwise (0: all)
SIMILAR_DEFAULT_LIMIT = 50  # kbindex similar: relations shown unless --limit says otherwise (0: all)
MAX_EXPANSIONS = 200       # expansions a query keeps per user keyword: the strongest (see search.expansion)

#: The relation types a similarity may have (the one list; ``store.similarities.check_similarity_type``
#: is the one check against it).
SIMILARITY_TYPES = (
    "synonym", "abbreviation", "related_concept", "broader", "narrower",
    "contrast", "application", "prerequisite", "component",
)
