"""The corpus of ``bench/scale.py`` (also used by ``bench/semantic_scale.py`` and ``bench/front_matter_sync.py``):
documents drawn with Cranfield's word frequencies, keywords files, front matter and typed relations, under
the folder layouts and shares a :class:`Corpus` names. See ``bench/scale.py`` for what each setting means."""

from __future__ import annotations

import bisect
import json
import random
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.cranfield import DEFAULT_DATA, load
from kb_indexer.defaults import SIMILARITY_TYPES as TYPES

STOP = set("the of and a in to is for on with by are as at an be from that this which it or were was".split())


class Vocabulary:
    """Cranfield's word frequencies and frequent word pairs."""

    def __init__(self, data: Path = DEFAULT_DATA):
        corpus, self.queries, _ = load(data)
        words: Counter[str] = Counter()
        pairs: Counter[str] = Counter()
        for doc in corpus:
            toks = re.findall(r"[a-z]+", (doc.get("title", "") + " " + doc["text"]).lower())
            words.update(toks)
            pairs.update(f"{a} {b}" for a, b in zip(toks, toks[1:]) if a not in STOP and b not in STOP)
        self.words = [w for w, _ in words.most_common()]
        total, self.cum = 0, []
        for w in self.words:
            total += words[w]
            self.cum.append(total)
        self.keywords = [p for p, n in pairs.most_common() if n >= 2]

    def sample(self, rng: random.Random, k: int) -> list[str]:
        top = self.cum[-1]
        return [self.words[bisect.bisect_left(self.cum, rng.random() * top)] for _ in range(k)]


@dataclass
class Corpus:
    """Generator settings: each varies what sync and the stale check meet (see ``--layout`` etc.)."""

    seed: int = 7
    layout: str = "round-robin"   # round-robin: file i in area-(i % 100) (every folder written to the end);
    #                               nested: area-NN/topic-M/ written folder by folder; flat: one folder
    front_matter: float = 0.3     # share of documents with a YAML front-matter block (title, tags, date)
    keywords_files: float = 1.0   # share of documents with a <doc>.keywords.json beside them
    relations: int | None = None  # typed relations in similarities.json (default: docs / 2)
    rare: float = 0.0             # share of body tokens that are rare names and codes, from a vocabulary that
    #                               keeps growing with the collection (a new one at rare_new of them)
    rare_new: float = 0.4
    keywords: tuple[int, int] = (5, 12)  # keywords a document's file lists, at least and at most
    zipf: float = 0.8             # the skew of the keyword draw (1 / rank ** zipf) over docs / 4 phrases
    lengths: str = "uniform"      # body words: uniform 300-1,500, or lognormal (median 600, cut to 300-1,500)

    def folder(self, i: int, docs: int) -> str:
        if self.layout == "flat":
            return "notes"
        if self.layout == "nested":
            per = max(1, -(-docs // 400))           # 400 leaf folders, filled one after the other
            leaf = i // per
            return f"area-{leaf // 8:02d}/topic-{leaf % 8}"
        return f"area-{i % 100:02d}"

    def label(self) -> str:
        rel = "N/2" if self.relations is None else str(self.relations)
        extra = (f", {self.rare:.0%} rare tokens ({self.rare_new:.0%} new), {self.keywords[0]}-{self.keywords[1]} keywords (Zipf "
                 f"{self.zipf}), {self.lengths} lengths") if self.rare or self.lengths != "uniform" else ""
        return (f"seed {self.seed}, {self.layout} folders, front matter {self.front_matter:.0%}, "
                f"keywords files {self.keywords_files:.0%}, {rel} relations{extra}")


def generate(out: Path, docs: int, vocab: Vocabulary, corpus: Corpus | None = None) -> Path:
    corpus = corpus or Corpus()
    rng = random.Random(corpus.seed)
    kb = out / "knowledge-base"
    n_kw = min(len(vocab.keywords), max(200, docs // 4))
    keywords = vocab.keywords[:n_kw]
    weights = [1.0 / (i + 1) ** corpus.zipf for i in range(n_kw)]
    rare = RareWords(rng, corpus.rare_new)
    for i in range(docs):
        _write_document(kb, f"{corpus.folder(i, docs)}/doc-{i:06d}", rng, vocab, keywords, weights, corpus, rare)
    n_rel = docs // 2 if corpus.relations is None else corpus.relations
    (out / "similarities.json").write_text(json.dumps({"similarities": _relations(rng, keywords, n_rel)}),
                                           encoding="utf-8")
    (out / "rare-words.json").write_text(json.dumps(rare.minted[:5000]), encoding="utf-8")  # for the questions
    return kb


class RareWords:
    """Names and codes (``Torvalmik``, ``kx4471``): a draw mints a new one at ``new`` of the draws, else
    repeats one already minted, so the vocabulary keeps growing with the collection (as Heaps' law has it
    of real text: a few hundred thousand distinct words in 50,000 notes)."""

    SYLLABLES = "ka ro mi ten dal vor shi lu gre pan bel tor sen wik ard mo zu fen hal qui bro nes tal dri".split()

    def __init__(self, rng: random.Random, new: float = 0.4):
        self.rng, self.new, self.minted = rng, new, []

    def draw(self) -> str:
        rng = self.rng
        if not self.minted or rng.random() < self.new:
            if rng.random() < 0.5:
                word = "".join(rng.choice(self.SYLLABLES) for _ in range(rng.randint(2, 4))).capitalize()
            else:
                word = f"{rng.choice('abcdefghkmnprstxz')}{rng.choice('abcdefghkmnprstxz')}{rng.randint(10, 99999)}"
            self.minted.append(word)
            return word
        return rng.choice(self.minted)


def body_length(rng: random.Random, lengths: str) -> int:
    if lengths == "lognormal":
        return min(1500, max(300, int(rng.lognormvariate(6.4, 0.45))))
    return rng.randint(300, 1500)


def _write_document(kb: Path, stem: str, rng: random.Random, vocab: Vocabulary, keywords: list[str],
                    weights: list[float], corpus: Corpus, rare: RareWords) -> None:
    (kb / stem).parent.mkdir(parents=True, exist_ok=True)
    words = vocab.sample(rng, body_length(rng, corpus.lengths))
    if corpus.rare:
        words = [rare.draw() if rng.random() < corpus.rare else w for w in words]
    paras = [" ".join(words[j:j + 80]) + "." for j in range(0, len(words), 80)]
    title = " ".join(words[:6]).capitalize()
    kws: list[str] = []
    for k in rng.choices(keywords, weights, k=rng.randint(*corpus.keywords) * 2):
        if k not in kws:
            kws.append(k)
    head = ""
    if rng.random() < corpus.front_matter:
        tags = ", ".join(kws[:rng.randint(1, 4)])
        head = (f"---\ntitle: \"{title}\"\ntags: [{tags}]\ndate: 2024-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}\n"
                f"description: >\n  {' '.join(words[6:20])}\n---\n\n")
    (kb / f"{stem}.md").write_text(head + f"# {title}\n\n" + "\n\n".join(paras) + "\n", encoding="utf-8")
    if rng.random() < corpus.keywords_files:
        meta = {"filepath": f"{stem}.md", "title": title, "summary": " ".join(words[6:31]) + ".",
                "keywords": kws[:corpus.keywords[1]]}
        (kb / f"{stem}.keywords.json").write_text(json.dumps(meta), encoding="utf-8")


def _relations(rng: random.Random, keywords: list[str], n: int) -> list[dict[str, Any]]:
    """``n`` typed relations (a third directional) between the more frequent keywords, pairs distinct."""
    sims: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    pool = keywords[: max(100, len(keywords) // 2)]
    if n > len(pool) * (len(pool) - 1) // 2:
        pool = keywords
    while len(sims) < n and len(seen) < len(pool) * (len(pool) - 1) // 2:
        a, b = rng.sample(pool, 2)
        key = (min(a, b), max(a, b))
        if key in seen:
            continue
        seen.add(key)
        sims.append({"keyword1": a, "keyword2": b, "type": rng.choice(TYPES), "context": f"When {a} meets {b}",
                     "score": round(rng.uniform(0.3, 1.0), 2), "directional": rng.random() < 0.33})
    return sims
