"""Automatic indexing: generated titles, summaries and keywords (``kbindex enrich``), and typed
similarity suggestions among the corpus' keywords (``kbindex suggest-similarities``).

* :mod:`keyphrases` -- the statistical keyphrase extractor (no LLM).
* :mod:`keywords_file` -- the ``generated`` marker and the merge that never loses a person's keyword.
* :mod:`llm_enrich` -- the one structured LLM call per document, with the statistical fallback.
* :mod:`run` -- choosing documents, batches, progress, writing and indexing.
* :mod:`suggest` -- abbreviations, co-occurrence and LLM relations among keywords.
"""
