"""The result of ``kbindex eval`` (``kb.learning.evaluate``): the ranking scored on relevance judgements."""

from __future__ import annotations

from kb_indexer.results.common import JsonObject, NotRequired, TypedDict


class EvalJudgements(TypedDict):
    source: str                   # "beir" (a queries file and its qrels) or "feedback" (the index's own marks)
    queries: str | None           # the queries file read (None: the recorded questions)
    qrels: str                    # the qrels file read, or "feedback"
    questions: int                # the judged questions scored (each has a relevant document)
    unjudged: int                 # questions without a relevant document: skipped
    without_text: int             # judged query ids the queries file does not hold: skipped
    relevant: int                 # relevant documents judged, over the questions scored
    unmatched: int                # relevant corpus ids naming no indexed document (they stay in the denominators)
    unmatched_ids: list[str]      # the first 10 of them
    ambiguous: int                # relevant corpus ids whose file name several documents have (unmatched too)
    ambiguous_ids: list[str]


class EvalConfig(TypedDict):
    name: str                     # "as it is", or the spec given (no-learned, method=fulltext, ...)
    options: JsonObject           # its query options that differ from the defaults
    ndcg_at_10: float             # means over the judged questions
    recall_at_100: float
    seconds: float                # the time its queries took
    methods: dict[str, int]       # the method each question ran (auto chooses per question) and how often
    lexical_fallbacks: int        # semantic or hybrid questions that ran without vectors


class EvalQuestion(TypedDict):
    id: str                       # the query id of the queries file, or of the history (feedback)
    question: str
    relevant: int
    ndcg_at_10: float             # the base configuration's
    recall_at_100: float
    compare_ndcg_at_10: NotRequired[float]     # with a comparison only
    compare_recall_at_100: NotRequired[float]
    delta: NotRequired[float]                  # base minus comparison, nDCG@10


class EvalResult(TypedDict):
    judgements: EvalJudgements
    base: EvalConfig
    compare: EvalConfig | None
    delta_ndcg_at_10: float | None     # base minus comparison (None without one)
    delta_recall_at_100: float | None
    wins: int | None                   # questions where the base has the higher nDCG@10
    losses: int | None                 # ... the comparison has
    ties: int | None
    p_value: float | None              # two-sided sign test of wins against losses
    questions: list[EvalQuestion]
    count: int
