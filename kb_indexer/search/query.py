"""``kbindex query``: keyword expansion + full-text BM25, fused, explained and recorded.

Pipeline (see the modules for each step):

1. method (:mod:`.method`): ``auto`` picks ``keyword`` for identifier-like
   queries, ``semantic`` for conceptual ones ("related to", "how to", 관련, 방법...),
   else ``hybrid`` (a known keyword or a proper noun in a question is a name, not
   an identifier); ``semantic`` and ``hybrid`` use the index's vectors when it has
   them and the question can be embedded (:mod:`.semantic`), else they run lexically
   and the JSON says so (``fallback``, and the ``semantic`` object);
2. user keywords: ``--keywords`` as given, else the known keywords found in
   the question (longest n-gram match against the keywords table), plus, for
   the keyword method, the identifiers found in the question;
3. expansion (:mod:`.expansion`) of each user keyword over the similarity
   graph (keyword and hybrid methods);
4. keyword evidence: documents tagged with a user keyword (exact) or an
   expansion of it (file, front-matter and learned tags alike);
5. full text (:mod:`.fulltext`): quoted phrases and known keywords of the
   question as phrases, the other content words as single terms (hybrid and
   fulltext), and in hybrid every identifier-like word (names too) once more as
   an exact phrase (double query weight: exact matches are boosted, full text
   stays on); only keywords and identifiers (keyword method);
6. dense (semantic and hybrid): the ``DENSE_DEPTH`` documents whose best chunk is
   closest to the question join the candidates; every candidate gets its cosine;
   ``semantic`` uses vectors and exact tags only (no expansion, no full text);
7. fusion (:mod:`.fusion`), deterministic order (score, then filepath), the pin and
   hide rules that fire for the question (:mod:`.rules`: after fusion and learned
   boosts), and one ``query_attempts`` row, written by the recorder the API layer passes in
   (:func:`kb_indexer.learn.history.record`; search never imports learn).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, cast

from kb_indexer.errors import KbError
from kb_indexer.search import feedback as prf
from kb_indexer.search import fulltext, neighbours, rules, sparse
from kb_indexer.search.context import ContextScorer
from kb_indexer.defaults import MAX_EXPANSIONS
from kb_indexer.search.expansion import (HOP_DECAY, Expansions, expand, expansion_map, is_comparison, resolve_weights,
                                         untagged)
from kb_indexer.search.fusion import EXPANSION_FACTOR, Candidate, apply_learned, explain as explain_parts, fuse
from kb_indexer.search.method import KnownKeywords, MethodChoice, choose_method
from kb_indexer.search.options import QueryOptions
from kb_indexer.search.question import check_question, dedupe_keywords
from kb_indexer.search.reasoning import design_source, reasoning, search_counts
from kb_indexer.search.pool import Pool, TagHits, select
from kb_indexer.search.pruning import PRUNE_MIN_DOCS, counted_up_to, prune_common_terms
from kb_indexer.store import documents
from kb_indexer.store.sparse import min_docs as sparse_min_docs
from kb_indexer.store.vectors import documents_without_vectors
from kb_indexer.search.semantic import DENSE_DEPTH, DenseResult, DenseSource
from kb_indexer.search.semantic import normalise as normalise_dense
from kb_indexer.search.semantic import run as run_dense
from kb_indexer.search.terms import MAX_TERMS, content_terms, find_known_keywords, note_names, parse_text, phrase
from kb_indexer.store.errors import OperationalError
from kb_indexer.store.connection import plain_rows
from kb_indexer.store.dbapi import Connection

if TYPE_CHECKING:   # kb_indexer.results imports typing_extensions below Python 3.12: annotations only
    from kb_indexer.results import (Expansion as ResultExpansion, HiddenByRule, JsonObject, QueryResult,
                                    RankedDocument, SemanticReport)

SUMMARY_SNIPPET_CHARS = 240


def _keyword_ids(conn: Connection, norms: list[str], known: dict[str, int] | None = None) -> dict[str, int]:
    """The ids of the keywords ``norms`` that exist; ``known``: ids already read (only the others are looked up)."""
    known = known or {}
    ids = {n: known[n] for n in norms if n in known}
    missing = [n for n in norms if n not in ids]
    if missing:
        ids.update({r[1]: r[0] for r in conn.execute(
            "SELECT id, keyword FROM keywords WHERE keyword IN (SELECT value FROM json_each(?))",
            (json.dumps(missing),))})
    return ids


# Functions the API layer passes in (search never imports learn): learned question -> document boosts, and
# the recorder of a query attempt in the history.
LearnedBoosts = Callable[[Connection, str], dict[int, dict[str, Any]]]
Recorder = Callable[..., tuple[int, int]]
Reranker = Callable[[list[dict[str, Any]]], dict[str, Any]]   # reorders results in place; its report
_DocRow = tuple[Any, ...]   # a result's document: (id, filepath, title, summary)


@dataclass
class _Spec:
    """One query's options, and what follows from them and the question."""

    question: str
    given: list[tuple[str, str]]
    context: str | None
    options: QueryOptions
    allowed_types: set[str] | None
    type_weights: dict[str, float]
    comparison: bool           # the question compares things: contrast relations may expand
    col_w: tuple[float, float, float, float]
    choice: MethodChoice
    rules: rules.Fired | None = None   # the pin and hide rules that fire for the question

    @property
    def limit(self) -> int:  # 0: all
        return self.options.limit


@dataclass
class _Found:
    """What the steps found: user keywords, expansions, ranked candidates and their snippets."""

    user: list[tuple[str, str]]
    keywords_from: str
    fts_query: fulltext.FtsQuery
    seeds: list[tuple[str, int | None]]
    expansions: Expansions     # the strongest MAX_EXPANSIONS of each user keyword, and how many more there were
    results: list[RankedDocument]
    total: int  # documents found by any channel, however many the limit shows
    channel_weights: dict[str, float]
    pruned: list[str]
    method: str = ""                          # the method that ran (semantic without vectors: hybrid)
    fallback: str | None = None               # "lexical" when semantic/hybrid ran without vectors
    dense_info: dict[str, Any] | None = None  # the JSON's "semantic" object
    feedback: prf.Feedback | None = None      # pseudo-relevance feedback words (full text's second pass)
    neighbourhood: neighbours.Neighbourhood | None = None   # score regularisation over the best candidates


def run_query(conn: Connection, question: str, keywords: list[str] | None = None,
              options: QueryOptions | None = None, *, context_scorer: ContextScorer | None = None,
              query_id: int | None = None, learned: LearnedBoosts | None = None, recorder: Recorder | None = None,
              dense: DenseSource | None = None, reranker: Reranker | None = None) -> QueryResult:
    """Run one query with its ``options`` (:class:`QueryOptions`, validated when built); returns the
    JSON-ready result. ``context_scorer`` judges relation contexts against ``options.context``;
    ``learned`` (when ``options.use_learned``) lifts or lowers documents by learned associations;
    ``recorder`` (when ``options.record``) records the attempt, on the recorded query ``query_id`` if given
    (``refine``); ``dense`` (from the API layer) lets semantic and hybrid queries use the index's vectors;
    ``reranker`` (``query --rerank``) reorders the results before they are recorded (the history keeps the
    order shown)."""
    opts = options or QueryOptions()
    spec = _spec(question, keywords, opts, lambda norms: set(_keyword_ids(conn, norms)))
    with fulltext.one_read(conn):   # the question's full-text reads: one snapshot of its scores
        spec.rules = rules.fired(conn, " ".join([spec.question, *(g for g, _ in spec.given)]))
        found = _find(conn, spec, context_scorer, learned if opts.use_learned else None, opts.explain, dense)
    out = _output(spec, found)
    if opts.explain:
        out["query"]["explain"] = _explain(spec, found)
    if reranker is not None:   # the results below the pinned ones
        out["rerank"] = rules.rerank_rest(cast("list[dict[str, Any]]", out["results"]), reranker)
    if opts.record and recorder is not None:
        _record(conn, out, spec, found, recorder, query_id)
    return out


def _spec(question: Any, keywords: list[str] | None, opts: QueryOptions, known: KnownKeywords) -> _Spec:
    check_question(question, keywords)
    question = question if isinstance(question, str) else ""
    given = dedupe_keywords(keywords or [])
    allowed = set(opts.types) if opts.types else None
    comparison = is_comparison(question)
    return _Spec(
        question=question, given=given,
        context=opts.context.strip() if isinstance(opts.context, str) and opts.context.strip() else None,
        options=opts, allowed_types=allowed,
        type_weights=resolve_weights(dict(opts.weights) if opts.weights else None,
                                     contrast=comparison or "contrast" in (allowed or ())),
        comparison=comparison, col_w=opts.column_weights or fulltext.DEFAULT_COLUMN_WEIGHTS,
        choice=choose_method(opts.method, question, [g for g, _ in given], known))


def _dense(conn: Connection, spec: _Spec, source: DenseSource | None) -> tuple[DenseResult | None,
                                                                                     dict[str, Any] | None]:
    """The vector scores of a semantic or hybrid query, and the JSON's ``semantic`` object (None for the
    lexical methods). Any failure (no vectors, backend down) leaves the query lexical and says why."""
    if spec.choice.method not in ("semantic", "hybrid"):
        return None, None
    source = source or DenseSource(unavailable="no embedding model given to the query")
    info: dict[str, Any] = {"backend": source.backend, "model": source.model_name, "used": False, "error": None,
                            "configured": source.configured}
    if source.model is not None:
        info.update(documents_without_vectors=None, files_without_vectors=None)
    try:
        result = run_dense(conn, source, spec.question, max(DENSE_DEPTH, spec.limit))
    except KbError as exc:
        info["error"] = exc.message
        result = None
    if source.model is not None:   # the vectors read tell how many documents have some
        info["encoder"] = source.encoder
        n, paths = documents_without_vectors(conn, source.model.id,
                                             with_vectors=result.info.get("documents") if result else None)
        info.update(documents_without_vectors=n, files_without_vectors=paths)
    if result is None:
        return None, info
    info["used"] = True
    info.update(result.info)
    return result, info


def _find(conn: Connection, spec: _Spec, context_scorer: ContextScorer | None,
          learned: LearnedBoosts | None, explain: bool, dense_source: DenseSource | None = None) -> _Found:
    """Keywords, expansion, tagged documents, learned associations, full text and vectors, fused and ranked."""
    dense, dense_info = _dense(conn, spec, dense_source)
    method = spec.choice.method
    if method == "semantic" and dense is None:
        method = "hybrid"
    user, keywords_from, fts_query, known = _plan(conn, spec.question, spec.given, spec.choice)
    user_norms = [n for _, n in user]
    seeds, expansions, pool = _keyword_channel(conn, spec, method, user_norms, context_scorer, known)
    in_text = untagged(conn, expansions) if method != "semantic" else []
    if in_text:   # a relation of words no document is tagged with: its documents are found by their text
        fts_query = fulltext.build_query([*fts_query.terms, *(phrase(k) for k in in_text)], MAX_TERMS)
    n_docs = _document_count(conn)
    view = _sparse_view(conn, spec.col_w, n_docs, fts_query.terms) if fts_query else None
    fts_query, pruned = prune_common_terms(conn, fts_query, n_docs, view)
    boosts = learned(conn, spec.question) if learned is not None else {}
    for doc_id, info in boosts.items():  # learned question -> document associations find documents too
        if info["boost"] > 0:
            pool.add(doc_id)
    # Each document a not-helpful mark may push down, or a rule hide, makes room for one more full-text hit.
    penalised = sum(1 for info in boosts.values() if info["boost"] < 0) + len(spec.rules.hides if spec.rules else ())
    lexical_query = fts_query if method != "semantic" else fulltext.build_query([])
    if dense is not None:   # before full text, so that one pass scores the documents vectors found too
        _add_dense_candidates(dense, pool)
    feedback = spec.options.prf and method in ("fulltext", "hybrid") and n_docs >= prf.FB_MIN_DOCS and \
        (dense is None or prf.FB_WITH_VECTORS)
    dense_top = normalise_dense(dense.top, min(dense.top.values())) if dense is not None and dense.top else None
    regularise = method in ("fulltext", "hybrid") and (dense is None or neighbours.NB_WITH_VECTORS) and \
        n_docs >= neighbours.NB_MIN_DOCS
    hits = max(spec.limit, neighbours.NB_DOCS) if regularise else spec.limit   # the neighbours' candidates
    snippets, total, fb = _add_fulltext(conn, lexical_query, pool, hits + penalised if spec.limit else 0,
                                        spec.col_w, view, feedback, dense_top, spec.limit + penalised or None)
    pool.learned = {d: info["boost"] for d, info in boosts.items() if d in pool.docs}  # (a not-helpful mark
    candidates, channel_weights, hood = _fuse(pool, dense, spec.limit,                 # lowers a document too)
                                              conn if regularise else None, spec.rules)
    ranked, docs = _rank(conn, candidates, spec.limit, spec.rules.pins if spec.rules else {})
    if fb is not None:
        for d in fb.lifted([c.doc_id for c in ranked if c.bm25 is not None]):
            candidates[d].feedback = True
    snippets.update(fulltext.snippets(conn, fts_query, [c.doc_id for c in ranked
                                                        if c.bm25 is not None and c.doc_id not in snippets]))
    results = [_result(c, docs[c.doc_id], snippets.get(c.doc_id), explain, channel_weights, lexical_query.terms)
               for c in ranked]
    if spec.rules is not None:
        rules.annotate(spec.rules, cast("list[dict[str, Any]]", results))
        total += spec.rules.pulled_in - len(spec.rules.hidden)
    return _Found(user, keywords_from, fts_query, seeds, expansions, results, total, channel_weights, pruned,
                  method, "lexical" if dense_info is not None and dense is None else None, dense_info,
                  fb.feedback if fb is not None else None, hood)


def _keyword_channel(conn: Connection, spec: _Spec, method: str, user_norms: list[str],
                     context_scorer: ContextScorer | None,
                     known: dict[str, int]) -> tuple[list[tuple[str, int | None]], Expansions, Pool]:
    """The user keywords' ids (``known``: those the question's look-up already read), their expansions, and the
    documents tagged with either (a new pool)."""
    use_keywords = method in ("keyword", "hybrid", "semantic")
    ids = _keyword_ids(conn, user_norms, known) if use_keywords else {}
    seeds = [(n, ids.get(n)) for n in user_norms]
    expansions = Expansions()
    opts = spec.options
    if ids and opts.expand_depth > 0 and method != "semantic":   # semantic: exact tags only
        expansions = expand(conn, seeds, depth=opts.expand_depth, threshold=opts.min_weight,
                            types=spec.allowed_types, weights=spec.type_weights, context=spec.context,
                            context_scorer=context_scorer, context_threshold=opts.context_threshold)
    return seeds, expansions, Pool(TagHits.load(conn, seeds, expansions, len(user_norms)) if ids else TagHits())


def _fuse(pool: Pool, dense: DenseResult | None, limit: int, regularise: Connection | None = None,
          fired: rules.Fired | None = None
          ) -> tuple[dict[int, Candidate], dict[str, float], neighbours.Neighbourhood | None]:
    """Every pool document's fused score (learned boosts applied, then regularised by its neighbours' when
    ``regularise`` is the connection to read their words from, then the ``fired`` rules: hidden ones out, pinned
    ones in); Candidate objects for the best ``limit`` and those tied with the last only, and the pinned."""
    parts = {"keyword": pool.tags.parts, "fulltext": fulltext.normalise(pool.bm25),
             "dense": _dense_parts(dense, pool) if dense is not None else {}}
    scores, channel_weights = fuse(pool.docs, parts["keyword"], parts["fulltext"], parts["dense"])
    if dense is not None and pool.bm25:   # vector feedback (hybrid; semantic.refine): from a first fusion's best,
        first = dict(scores)              # every candidate's cosine again, fused again
        apply_learned(first, pool.learned)
        refined = dense.refine(first, max(DENSE_DEPTH, limit))
        if refined is not None:
            pool.cosine.clear()
            parts["dense"] = _dense_parts(refined, pool)
            scores, channel_weights = fuse(pool.docs, parts["keyword"], parts["fulltext"], parts["dense"])
    scale = apply_learned(scores, pool.learned)   # then a document a learned association lifts lifts its neighbours
    hood = neighbours.regularise(regularise, scores) if regularise is not None else None   # too
    pinned = rules.apply_to_scores(fired, scores) if fired is not None else []
    best = select(scores, limit)
    chosen = set(best)
    candidates = pool.candidates(best + [d for d in pinned if d not in chosen], parts, scores)
    if hood is not None:
        scale /= 1.0 - neighbours.NB_WEIGHT   # every score keeps 1 - NB_WEIGHT of its own
    for d, c in candidates.items():
        c.scale = scale
        if hood is not None:
            c.neighbours = hood.parts.get(d, 0.0)
    return candidates, channel_weights, hood


def _add_dense_candidates(dense: DenseResult, pool: Pool) -> None:
    """The documents vector search found join the candidates, with their cosine."""
    for d, cos in dense.top.items():
        pool.add(d)
        pool.cosine[d] = cos
        pool.semantic.add(d)


def _dense_parts(dense: DenseResult, pool: Pool) -> dict[int, float]:
    """Every candidate gets its cosine; returns the normalised dense parts."""
    pool.cosine.update(dense.get([d for d in pool.docs if d not in pool.cosine]))
    floor = min(dense.top.values()) if dense.top else 0.0
    return normalise_dense(pool.cosine, floor)


ColumnWeights = tuple[float, float, float, float]


def _sparse_view(conn: Connection, col_w: ColumnWeights, n_docs: int,
                 terms: tuple[str, ...]) -> sparse.View | None:
    """The sparse index when the knowledge base is large enough to keep one, it is current and the question
    is not answered sooner on FTS5 (few matches in a cold process), else None (full text then runs on FTS5;
    the scores are the same)."""
    if n_docs < sparse_min_docs() or sparse.cheaper_on_fts5(conn, terms, counted_up_to(n_docs, len(terms))):
        return None
    return sparse.open_view(conn, col_w, terms)


def _document_count(conn: Connection) -> int:
    """How many documents the index holds (exact when it may be large enough to prune terms)."""
    return documents.count(conn, min(PRUNE_MIN_DOCS, sparse_min_docs()))


def _output(spec: _Spec, found: _Found) -> QueryResult:
    expanded = dict.fromkeys(n for _, n in found.user)   # an ordered set: each keyword once, the first time
    expanded.update(dict.fromkeys(e.keyword for e in sorted(found.expansions,
                                                            key=lambda e: (-round(e.weight, 9), e.keyword))))
    out: QueryResult = {
        "query": {
            "question": spec.question,
            "keywords": [u for u, _ in found.user],
            "keywords_from": found.keywords_from,
            "expanded_keywords": list(expanded),
            "expansion_map": expansion_map(found.seeds, found.expansions),
            "context": spec.context,
            "threshold": spec.options.min_weight,
            "min_weight": spec.options.min_weight,
            "context_threshold": spec.options.context_threshold,
            "expand_depth": spec.options.expand_depth,
            "method": found.method,
            "method_requested": spec.choice.requested,
            "method_reason": _reason(spec, found),
            "fallback": found.fallback,
        },
        "results": found.results,
        "count": len(found.results),
        # the counts in the JSON's order (mypy cannot see that ** of a TypedDict brings its optional key)
        **search_counts(found.results,  # type: ignore[typeddict-item]
                        dense=found.dense_info is not None and found.fallback is None),
        "total": found.total,
    }
    if spec.rules is not None and spec.rules.hidden:   # the documents found that a hide rule left out
        out["hidden_by_rules"] = cast("list[HiddenByRule]", spec.rules.hidden)
    if found.expansions.omitted:   # a keyword with more expansions than the cap: how many were left out
        out["query"]["expansion_limit"] = MAX_EXPANSIONS
        out["query"]["expansions_omitted"] = sum(found.expansions.omitted.values())
    if found.dense_info is not None:
        out["semantic"] = cast("SemanticReport", found.dense_info)   # built key by key in _dense
    return out


def _reason(spec: _Spec, found: _Found) -> str:
    if not found.fallback:
        return spec.choice.reason
    error = (found.dense_info or {}).get("error") or "no vectors"
    ran = "keyword tags and full text" if found.method == "hybrid" else found.method
    return f"{spec.choice.reason}; without vectors ({error}): {ran} only"


def _explain(spec: _Spec, found: _Found) -> JsonObject:
    return {
        "fulltext_terms": list(found.fts_query.terms),
        "fulltext_match": found.fts_query.match,
        "fulltext_pruned": found.pruned,
        "fulltext_feedback": [{"term": t, "weight": round(w, 6)} for t, w in found.feedback.terms]
        if found.feedback else [],
        "neighbourhood": found.neighbourhood.to_dict() if found.neighbourhood is not None else None,
        "column_weights": dict(zip(("title", "summary", "keywords", "body"), spec.col_w)),
        "type_weights": spec.type_weights,
        "comparison": spec.comparison,
        "types": sorted(spec.allowed_types) if spec.allowed_types else None,
        "hop_decay": HOP_DECAY,
        "expansion_factor": EXPANSION_FACTOR,
        "fusion_weights": found.channel_weights,
        "presence": fulltext.PRESENCE,
        "expansions": [e.to_dict() for e in found.expansions],
        "expansion_limit": MAX_EXPANSIONS,
        "identifiers": [{"text": i.text, "kind": i.kind} for i in spec.choice.identifiers],
        "names": [{"text": i.text, "kind": i.kind} for i in spec.choice.names],
        "rules": spec.rules.explain() if spec.rules is not None else [],
    }


def _record(conn: Connection, out: QueryResult, spec: _Spec, found: _Found, recorder: Recorder,
            query_id: int | None) -> None:
    """One history row; a read-only or long-locked index still answers and says the row was lost."""
    opts = spec.options
    options = {**opts.to_dict(), "method_requested": spec.choice.requested, "keywords_from": found.keywords_from,
               "identifiers": [i.text for i in spec.choice.identifiers]}
    qid: int | None
    aid: int | None
    try:
        qid, aid = recorder(conn, spec.question, spec.context, query_id=query_id,
                            keywords=[u for u, _ in found.user], expand_depth=opts.expand_depth,
                            threshold=opts.min_weight, method=found.method, results=found.results,
                            expansions=[e.to_dict() for e in found.expansions], options=options)
    except OperationalError as exc:
        qid = aid = None
        out["history_error"] = f"query not recorded in the history: {exc}"
    out["query_id"], out["attempt_id"] = qid, aid


def _plan(conn: Connection, question: str, given: list[tuple[str, str]],
          choice: MethodChoice) -> tuple[list[tuple[str, str]], str, fulltext.FtsQuery, dict[str, int]]:
    """The user keywords (``(as given, normalised)``), where they came from, the full-text query, and the ids of
    the known keywords the question names."""
    parsed = parse_text(question)
    spans = find_known_keywords(conn, parsed.words)
    known = {norm: kid for _, _, kid, norm in spans}
    if given:
        user, keywords_from = given, "given"
    else:
        known_phrases = _keyword_ids(conn, parsed.phrases)     # a quoted known keyword counts too
        known.update(known_phrases)
        user = dedupe_keywords([p for p in parsed.phrases if p in known_phrases] + [n for _, _, _, n in spans])
        keywords_from = "question"
    terms: list[str] = list(parsed.phrases)
    exact = choice.identifiers + choice.names
    if choice.method == "keyword":
        # exact matching: known keywords and identifiers only, each as a phrase
        if not given:
            user = dedupe_keywords([u for u, _ in user] + [i.text for i in exact])
        terms += [norm for _, _, _, norm in spans]
        terms += [phrase(i.text) for i in exact] + note_names(exact)
    else:
        # known keywords as phrases, the other words as single terms
        starts = {s: norm for s, _, _, norm in spans}
        inside = {i for s, e, _, _ in spans for i in range(s + 1, e)}
        for i, w in enumerate(parsed.words):
            if i in starts:
                terms.append(starts[i])
            elif i not in inside:
                terms += content_terms([w])
        if choice.method == "hybrid":
            # identifier-like words (names included) once more as exact phrases: double query weight
            terms += [phrase(i.text) for i in exact] + note_names(exact)
    terms += [phrase(g) for g, _ in given]
    return user, keywords_from, fulltext.build_query(terms, MAX_TERMS), known


def _add_fulltext(conn: Connection, fts_query: fulltext.FtsQuery, pool: Pool, limit: int, col_w: ColumnWeights,
                  view: sparse.View | None = None,
                  feedback: bool = False,
                  dense: dict[int, float] | None = None,
                  snippet_rows: int | None = None) -> tuple[dict[int, str], int, prf.Scored | None]:
    """Full-text hits (the best ``limit`` outside the pool and those tied with the last, every match for 0,
    plus the scores of the pool's documents); returns their snippets and how many documents the query
    finds in all.

    From the sparse index when there is one (every match scored at once) and no sync changed it meanwhile.
    Else, with few pool documents:
    one ranked FTS5 query (snippets included) plus per-row scores for the pool documents it missed; with
    many: one pass over all matches scores everything, and snippets come later, for the final results
    only. Either way the hits kept do not depend on document ids or FTS5's order within a tie, so
    ``--limit N`` gives the first N results of any larger limit.

    With ``feedback`` every match is scored with :mod:`.feedback`'s words too (``dense``: the vectors'
    normalised scores, which help choose the feedback documents), and that scoring is returned as well.
    """
    snippets: dict[int, str] = {}
    known = list(pool.docs)
    if not fts_query:
        return snippets, _count_known(conn, pool, known), None
    if feedback:
        fb = prf.score(conn, fts_query, col_w, view, limit, dense)
        if fb.scores is not None and view is not None and not sparse.still_current(conn, view):
            fb = prf.score(conn, fts_query, col_w, None, limit, dense)    # a sync changed the sparse index meanwhile
        total = _add_scored(pool, fb.scores, limit, known, conn) if fb.scores is not None else \
            _add_all(pool, fb.by_doc or {}, limit, known, conn)
        return fb.snippets, total, fb
    scored = sparse.score(conn, view, fts_query.terms, fulltext.phrase_sql(col_w)) if view is not None else None
    if scored is not None and view is not None and sparse.still_current(conn, view):
        return snippets, _add_scored(pool, scored, limit, known, conn), None
    if len(known) > fulltext.PER_ROW_MAX or not limit:
        scores = fulltext.all_scores(conn, fts_query, col_w)
        return snippets, _add_all(pool, scores, limit, known, conn), None
    total = fulltext.count_found(conn, fts_query, known)
    for d, score, snip in fulltext.search(conn, fts_query, limit, col_w, snippet_rows=snippet_rows):
        pool.add(d)
        pool.bm25[d] = score
        if snip:
            snippets[d] = snip
    pool.bm25.update(fulltext.scores_for(conn, fts_query, [d for d in known if d not in pool.bm25], col_w))
    return snippets, total, None


def _add_scored(pool: Pool, scored: sparse.Scores, limit: int, known: list[int], conn: Connection) -> int:
    """The sparse index's scores: the pool's own, and the best ``limit`` others (with ties)."""
    found = scored.get(known)
    keep = scored.best_with_ties(limit or len(scored), set(found), fulltext.tie_margin(scored.best()))
    return _add_hits(pool, found, keep, len(scored), known, conn)


def _add_all(pool: Pool, scores: dict[int, float], limit: int, known: list[int], conn: Connection) -> int:
    """Scores of every match: the pool's own, and the best ``limit`` others (with ties)."""
    found = {d: scores[d] for d in known if d in scores}
    others = {d: s for d, s in scores.items() if d not in pool.docs}
    kept = fulltext.best_with_ties(others, limit, max(scores.values(), default=0.0)) if limit else list(others)
    return _add_hits(pool, found, {d: scores[d] for d in kept}, len(scores), known, conn)


def _add_hits(pool: Pool, found: dict[int, float], keep: dict[int, float], matched: int, known: list[int],
              conn: Connection) -> int:
    """Record the pool's own scores and the hits kept; returns the total found (matches plus the pool's
    documents that do not match)."""
    pool.bm25.update(found)
    for d, score in keep.items():
        pool.add(d)
        pool.bm25[d] = score
    return matched - len(found) + _count_known(conn, pool, known)


def _count_known(conn: Connection, pool: Pool, known: list[int]) -> int:
    """How many of the pool's documents ``known`` are indexed (tagged ones are, by their foreign key)."""
    tagged = pool.tags.parts
    return sum(1 for d in known if d in tagged) + fulltext.count_found(conn, None, [d for d in known
                                                                                   if d not in tagged])


def _rank(conn: Connection, candidates: dict[int, Candidate], limit: int,
          pinned: dict[int, Any]) -> tuple[list[Candidate], dict[int, _DocRow]]:
    """The ``pinned`` candidates first (in their order), then the best others by score up to ``limit`` (0: all),
    ties by filepath (only the tied ones need their path)."""
    first = [candidates[d] for d in pinned if d in candidates]
    key = {d: -round(c.score, 9) for d, c in candidates.items()}   # each score rounded once
    ranked = sorted((c for c in candidates.values() if c.doc_id not in pinned), key=lambda c: key[c.doc_id])
    limit = limit or len(candidates)
    rest = limit - len(first)
    if len(ranked) > rest:
        ranked = [c for c in ranked if key[c.doc_id] <= key[ranked[rest - 1].doc_id]] if rest > 0 else []
    docs = {r[0]: r for r in plain_rows(   # plain tuples: (id, filepath, title, summary)
        conn, "SELECT id, filepath, title, summary FROM documents WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps([c.doc_id for c in first + ranked]),))}
    ranked = sorted((c for c in ranked if c.doc_id in docs), key=lambda c: (key[c.doc_id], docs[c.doc_id][1]))
    return ([c for c in first if c.doc_id in docs] + ranked)[:limit], docs


def _result(c: Candidate, doc: _DocRow, snippet: str | None, explain: bool,
            channel_weights: dict[str, float], terms: tuple[str, ...]) -> RankedDocument:
    matched: list[str] = []
    users: list[str] = []
    expansions: list[ResultExpansion] = []
    for e in sorted(c.evidence, key=lambda e: (-e.value, e.keyword)) if c.evidence else ():
        if e.keyword not in matched:
            matched.append(e.keyword)
        if e.user_keyword not in users:
            users.append(e.user_keyword)
        if e.kind == "expansion":
            expansions.append({"original": e.user_keyword, "expanded": e.keyword,
                               "similarity_type": e.similarity_type or "", "weight": round(e.weight, 4)})
    sources = c.sources
    if not snippet:
        summary = " ".join((doc[3] or "").split())
        snippet = summary if len(summary) <= SUMMARY_SNIPPET_CHARS else \
            summary[:SUMMARY_SNIPPET_CHARS].rsplit(" ", 1)[0] + "…"
    score = round(c.score, 4)
    out: RankedDocument = {
        "filepath": doc[1],
        "title": doc[2],
        "summary": doc[3],
        "matched_keywords": matched,
        "user_keywords": users,
        "keyword_expansions": expansions,
        "relevance_score": score,
        "similarity": round(min(1.0, max(0.0, c.cosine)), 4) if c.cosine is not None else score,
        "sources": sources,
        "source": design_source(sources),
        "reasoning": reasoning(c.evidence, c.bm25 is not None, c.learned, snippet, terms, c.cosine, c.semantic),
        "snippet": snippet,
    }
    if explain:
        out["score_parts"] = explain_parts(c, channel_weights)
    return out
