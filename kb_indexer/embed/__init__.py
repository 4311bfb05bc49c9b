"""Embeddings as a feature: ``kbindex embed`` (:mod:`.index`, the documents' chunk vectors) and the
question's side of semantic and hybrid search (:mod:`.query`). The embedding model adapter itself
(:class:`kb_indexer.llm.embedding.EmbedClient`) stays in ``llm/``."""
