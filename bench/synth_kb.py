"""Generate a synthetic knowledge base: N markdown documents with keywords files and a similarities.json.

Realistic shape: a keyword vocabulary of about N/4 terms drawn with a Zipf-like skew (8-12 keywords a
document), ~300-word bodies, and about N/2 typed relations (a third of them directional).

    python bench/synth_kb.py OUT_DIR [--docs 20000] [--seed 7]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

TYPES = ["synonym", "abbreviation", "related_concept", "broader", "narrower", "contrast", "application",
         "prerequisite", "component"]
SYLLABLES = ["ka", "lo", "mi", "nu", "re", "sa", "ti", "vo", "ze", "qua", "bri", "del", "fon", "gar", "hep",
             "jin", "kel", "lum", "mor", "nix", "pol", "rav", "sul", "tor", "ven", "wex", "yor", "zul"]


def word(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))


def generate(out: Path, docs: int = 20000, seed: int = 7) -> dict:
    rng = random.Random(seed)
    kb = out / "knowledge-base"
    kb.mkdir(parents=True, exist_ok=True)
    n_kw = max(50, docs // 4)
    vocab = sorted({" ".join(word(rng) for _ in range(rng.choice((1, 1, 2, 2, 3)))) for _ in range(n_kw * 2)})[:n_kw]
    rng.shuffle(vocab)
    weights = [1.0 / (i + 1) ** 0.8 for i in range(len(vocab))]
    words = [word(rng) for _ in range(8000)]
    for i in range(docs):
        folder = kb / f"area-{i % 50:02d}"
        folder.mkdir(exist_ok=True)
        stem = f"doc-{i:06d}"
        kws = []
        while len(kws) < rng.randint(8, 12):
            k = rng.choices(vocab, weights)[0]
            if k not in kws:
                kws.append(k)
        title = " ".join(rng.choice(words) for _ in range(5)).capitalize()
        body = "\n\n".join(" ".join(rng.choice(words) for _ in range(60)) + "." for _ in range(5))
        text = f"# {title}\n\n{body}\n\n## Notes\n\nSee {kws[0]} and {kws[1]}.\n"
        (folder / f"{stem}.md").write_text(text, encoding="utf-8")
        meta = {"filepath": f"area-{i % 50:02d}/{stem}.md", "title": title,
                "summary": " ".join(rng.choice(words) for _ in range(20)) + ".", "keywords": kws,
                "categories": {"primary": kws[:3]}}
        (folder / f"{stem}.keywords.json").write_text(json.dumps(meta), encoding="utf-8")
    sims, seen = [], set()
    while len(sims) < docs // 2:
        a, b = rng.sample(vocab[: max(100, n_kw // 2)], 2)
        t = rng.choice(TYPES)
        key = (min(a, b), max(a, b), t)
        if key in seen:
            continue
        seen.add(key)
        sims.append({"keyword1": a, "keyword2": b, "type": t, "context": f"When discussing {a} and {b}",
                     "score": round(rng.uniform(0.3, 1.0), 2), "directional": rng.random() < 0.33})
    (out / "similarities.json").write_text(json.dumps({"similarities": sims}), encoding="utf-8")
    return {"docs": docs, "keywords": len(vocab), "similarities": len(sims), "root": str(out)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--docs", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    print(json.dumps(generate(args.out, args.docs, args.seed)))


if __name__ == "__main__":
    main()
