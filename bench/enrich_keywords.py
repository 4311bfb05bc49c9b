#!/usr/bin/env python3
"""How good are the keywords `kbindex enrich --all --no-llm` writes, and do they help a query find its note?

    python bench/enrich_keywords.py                  # this checkout beside main, in the same run
    python bench/enrich_keywords.py --baseline REV   # another revision as the baseline ("none": skip it)
    python bench/enrich_keywords.py --only notes,bundled

Each code version (this checkout, and ``git archive REV kb_indexer`` of the baseline) runs in its own process
on four collections:

* ``skills``: the 862 catalog entries of ../shared/data/skills, one note each (title = the skill's name, text
  = its description); questions: the development queries and bench/data/skills_tune.jsonl that need a skill.
  The collection the extractor's few parameters were tuned on.
* ``cranfield``: the 1,400 Cranfield abstracts (title given); its 225 judged queries.
* ``bundled``: this checkout's knowledge-base/ (.md files only: no keywords files, front matter left out);
  questions: bench/data/bundled_kb_questions.jsonl.
* ``notes``: bench/data/personal_notes, 18 personal notes (cooking, home repair, travel, programming);
  questions: bench/data/personal_notes_questions.jsonl.

Metrics, all through the real code path (``KnowledgeBase.enrich.documents(all_=True, use_llm=False)``):

(a) ``weak``: the share of generated keywords that :data:`JUDGED_WEAK` holds: function words, verbs of no
    topic (every inflection), vague adjectives, adverbs and nouns. The list is this bench's own and was written
    before the extractor was changed; the extractor does not import it.
(b) title/heading ``P`` / ``R`` / ``P@4``: each note enriched with its title and headings REMOVED (a copy of the
    collection whose notes have a front-matter title "-" and no heading lines; otherwise it is circular). A
    keyword is a hit when the Snowball stem of one of its words is a stem of the note's title or headings
    (stopwords and judged-weak words left out); ``R``: the share of those title/heading stems that occur in
    the text the extractor saw and that the keywords hold; ``P@4``: precision of the first four (the primary).
    ``kw/note``: the mean number of keywords. ``bundled`` also scores against its hand-written keywords files.
(c) retrieval: ``top1`` (the first result is a relevant note) and MRR@10 of ``query --method auto`` and
    ``--method keyword`` over the question set, before enrichment (no keywords) and after it (the notes as
    written, titles and headings in). nDCG@10 for Cranfield too.
(d) ``suggest-similarities``: how many co-occurrence suggestions, and the share naming a judged-weak keyword.

Speed: enrich --all throughput on the full copy of each collection, per second of wall time and per second of
this process's CPU time (steadier on a machine others use).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "bench" / "data"
sys.path.insert(0, str(REPO))
from bench.data import data_root  # noqa: E402 (after the path is set)

SHARED = data_root()
COLLECTIONS = ("skills", "cranfield", "bundled", "notes")
METHODS = ("auto", "keyword")

_VERBS = """
accept achieve act add admit agree allow appear apply argue arrive ask assume attempt avoid base be become begin
believe belong bring call can care carry cause change check choose claim come compare consider contain continue
could create deal decide depend describe do drop enable end ensure enter expect explain fail fall feel fill find
finish fit follow force forget get give go happen have hear help hold hope imagine improve include increase
indicate involve keep know lack lay lead leave let lie like look lose make manage matter may mean meet might
mention miss move must need note notice obtain occur offer open pass pay perform pick place plan point prefer
prepare present produce prove provide pull push put raise reach read realise realize receive reduce refer relate
remain remember remove report represent require result return reveal say see seem sell send serve set shall
should show sit skip sort speak spend stand start stay stick stop suggest suppose take talk tell tend think
throw touch treat try turn understand use vary wait want watch wish wonder work would write
"""
_IRREGULAR = """
am is are was were been being did does done doing went gone goes got gotten gave given took taken made came
brought thought told said knew known seen saw felt found kept left let lost meant met paid put read sent set
shown sat spoke spent stood understood wrote written held led lay lain fell fallen chose chosen
"""
_FUNCTION = """
a about above across after afterwards again against ago all almost alone along already also although always
among an and another any anybody anyhow anyone anything anyway anywhere apart around as at away back be because
before behind below beside besides between beyond both but by despite down during each either else elsewhere
enough etc even ever every everybody everyone everything everywhere except few for forth from further furthermore
hence her here hers herself him himself his how however i if in indeed inside instead into it its itself just
least less lot lots many me meanwhile mine more moreover most mostly much my myself near nearly neither never
nevertheless next no nobody none nor not nothing now nowhere of off often on once one ones only onto or other
others otherwise our ours ourselves out outside over own per perhaps quite rather really since so some somebody
someone something sometimes somewhat somewhere soon still such than that the their theirs them themselves then
there thereby therefore these they this those though through throughout thus till to together too toward towards
under unless unlike until up upon us very via we well what whatever when whenever where whereas wherever whether
which while who whoever whole whom whose why will with within without yet you your yours yourself yourselves
zero two three four five six seven eight nine ten hundred thousand second third fourth fifth twice
"""
_VAGUE = """
able actual actually additional afterward almost bad badly basic basically best better big bigger biggest brief
briefly certain certainly cheap cheaper clear clearly close common commonly complete completely correct correctly
current currently deep different directly early easier easiest easily easy entire entirely especially exact
exactly extra fair fairly far fast faster fastest fine first free fresh full fully general generally good great
greatly hard harder hardly heavy high higher huge ideal important interesting key large larger largest last late
later latest likely little long longer low lower main mainly major many maybe mere merely minor new newer nice
normal normally obvious obviously old older ongoing only particular particularly plain poor possible possibly
pretty previous previously probably proper properly quick quicker quickly rare rarely ready real recent recently
regular right rough roughly safe same short shortly significant simple simply slight slightly slow slower slowly
small smaller soft special specific specifically standard straight strong sure tiny top total true truly typical
typically usual usually various vast whole wide worse worst wrong
bit case cases day days detail details end ends example examples fact hour hours idea kind kinds lot minute
minutes month months part parts piece point points reason side sort stuff thing things time times type types
way ways week weeks year years
"""


def _inflections(verb: str) -> set[str]:
    """A verb's -s, -ed and -ing forms, by rule (over-generating does no harm: a non-word never occurs)."""
    out = {verb, verb + "s", verb + "es", verb + "ed", verb + "d", verb + "ing"}
    if verb.endswith("y"):
        out |= {verb[:-1] + "ies", verb[:-1] + "ied"}
    if verb.endswith("e"):
        out.add(verb[:-1] + "ing")
    if len(verb) > 2 and verb[-1] not in "aeiouwxy" and verb[-2] in "aeiou" and verb[-3] not in "aeiou":
        out |= {verb + verb[-1] + "ed", verb + verb[-1] + "ing"}   # stop -> stopped, stopping
    return out


#: The judge of metric (a): words that are not what a note is about.
JUDGED_WEAK = frozenset({f for v in _VERBS.split() for f in _inflections(v)} | set(_IRREGULAR.split())
                        | set(_FUNCTION.split()) | set(_VAGUE.split()))

_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
_HEADING_LINE = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")


def stemmer():
    import snowballstemmer

    return snowballstemmer.stemmer("english")


# --------------------------------------------------------------------------------------------- collections
def skill_notes() -> tuple[list[dict[str, Any]], list[tuple[str, set[str]]]]:
    catalog = [json.loads(line) for line in (SHARED / "skills" / "catalog.jsonl").open(encoding="utf-8")]
    notes = [{"rel": f"{s['name']}.md", "title": s["name"], "headings": [], "text": s["description"]}
             for s in catalog]
    questions = []
    for path in (SHARED / "skills" / "queries_dev.jsonl", DATA / "skills_tune.jsonl"):
        for line in path.open(encoding="utf-8"):
            q = json.loads(line)
            if q["relevant"]:
                questions.append((q["query"], {f"{n}.md" for n in q["relevant"]}))
    return notes, questions


def cranfield_notes() -> tuple[list[dict[str, Any]], list[tuple[str, dict[str, int]]]]:
    sys.path.insert(1, str(REPO))
    from bench.cranfield import load

    corpus, queries, qrels = load(SHARED / "cranfield")
    notes = [{"rel": f"{d['_id']}.md", "title": " ".join(d.get("title", "").split()) or f"Document {d['_id']}",
              "headings": [], "text": d.get("text", "")} for d in corpus]
    return notes, [(q["text"], {f"{k}.md": v for k, v in qrels[q["_id"]].items()}) for q in queries]


def markdown_notes(folder: Path) -> list[dict[str, Any]]:
    """Each .md file: its H1 as the title, its other headings, and its text without front matter or headings."""
    notes = []
    for path in sorted(folder.rglob("*.md")):
        raw = path.read_text(encoding="utf-8")
        if raw.startswith("---\n"):
            raw = raw[raw.index("\n---\n", 4) + 5:]
        title, headings, lines, fence = "", [], [], False
        for line in raw.splitlines():
            if line.lstrip().startswith(("```", "~~~")):
                fence = not fence
            m = None if fence else _HEADING_LINE.match(line)
            if m and not title and line.lstrip().startswith("# "):
                title = m.group(1)
            elif m:
                headings.append(m.group(1))
            else:
                lines.append(line)
        notes.append({"rel": path.relative_to(folder).as_posix(), "title": title, "headings": headings,
                      "text": "\n".join(lines).strip(), "raw": raw})
    return notes


def questions_file(path: Path) -> list[tuple[str, set[str]]]:
    return [(q["q"], {q["doc"]}) for q in map(json.loads, path.open(encoding="utf-8"))]


def collection(name: str) -> tuple[list[dict[str, Any]], list[tuple[str, Any]]]:
    if name == "skills":
        return skill_notes()
    if name == "cranfield":
        return cranfield_notes()
    if name == "bundled":
        return markdown_notes(REPO / "knowledge-base"), questions_file(DATA / "bundled_kb_questions.jsonl")
    return markdown_notes(DATA / "personal_notes"), questions_file(DATA / "personal_notes_questions.jsonl")


def write_kb(notes: list[dict[str, Any]], root: Path, stripped: bool):
    """A knowledge base of ``notes``: as written (``# title``, headings as ``##``) or with no title or heading
    (a front-matter title "-", which gives the extractor no word, in place of the file name it would use)."""
    from kb_indexer.api import KnowledgeBase

    kb_dir = root / "knowledge-base"
    for n in notes:
        path = kb_dir / n["rel"]
        path.parent.mkdir(parents=True, exist_ok=True)
        if stripped:
            text = f"---\ntitle: \"-\"\n---\n\n{n['text']}\n"
        else:
            text = n.get("raw") or f"# {n['title']}\n\n{n['text']}\n"
        path.write_text(text, encoding="utf-8")
    kb, _ = KnowledgeBase.init(root / "kbindex.db", kb_dir)
    res = kb.sync()
    if res["errors"]:
        raise SystemExit(f"sync errors: {res['errors'][:3]}")
    return kb


# --------------------------------------------------------------------------------------------------- metrics
def stems(text: str, stem) -> set[str]:
    return {stem.stemWord(w) for w in _WORD.findall(text.lower()) if w not in JUDGED_WEAK and len(w) > 1}


def quality(notes: list[dict[str, Any]], generated: dict[str, list[str]], stem,
            gold: dict[str, list[str]] | None = None) -> dict[str, float]:
    """Metrics (a) and (b) over the keywords ``generated`` for each note (relative path -> keywords); with
    ``gold`` (relative path -> a person's keywords) also precision and recall against those."""
    kws = weak = hits = hits4 = n4 = reach = found = 0
    gold_hits = gold_total = gold_reach = gold_found = 0
    for n in notes:
        got = generated.get(n["rel"], [])
        kw_stems = [{stem.stemWord(w) for w in _WORD.findall(k.lower())} for k in got]
        all_stems = set().union(*kw_stems)
        text = stems(n["text"], stem)
        target = stems(" ".join([n["title"].replace("-", " "), *n["headings"]]), stem)
        kws += len(got)
        weak += sum(k.lower() in JUDGED_WEAK for k in got)
        hits += sum(bool(s & target) for s in kw_stems)
        hits4 += sum(bool(s & target) for s in kw_stems[:4])
        n4 += min(4, len(got))
        reach += len(text & target)
        found += len(text & target & all_stems)
        if gold is not None and n["rel"] in gold:
            want = {stem.stemWord(w) for g in gold[n["rel"]] for w in _WORD.findall(g.lower())}
            gold_hits += sum(bool(s & want) for s in kw_stems)
            gold_total += len(got)
            gold_reach += len(text & want)
            gold_found += len(text & want & all_stems)
    out = {"kw/note": kws / max(1, len(notes)), "weak": weak / max(1, kws), "P": hits / max(1, kws),
           "P@4": hits4 / max(1, n4), "R": found / max(1, reach)}
    if gold is not None:
        out["hand P"] = gold_hits / max(1, gold_total)
        out["hand R"] = gold_found / max(1, gold_reach)
    return out


def retrieval(kb, questions: list[tuple[str, Any]], cranfield: bool) -> dict[str, float]:
    from kb_indexer.api import QueryOptions

    sys.path.insert(1, str(REPO))
    from bench.cranfield import ndcg_at

    out: dict[str, float] = {}
    for method in METHODS:
        top1 = rr = nd = 0.0
        for text, rel in questions:
            res = kb.query(text, options=QueryOptions(method=method, limit=10, record=False))
            ranked = [r["filepath"] for r in res["results"]]
            top1 += bool(ranked) and ranked[0] in rel
            rr += next((1 / (i + 1) for i, fp in enumerate(ranked) if fp in rel), 0.0)
            if cranfield:
                nd += ndcg_at(ranked, rel, 10)
        out[f"{method} top1"] = top1 / len(questions)
        out[f"{method} MRR"] = rr / len(questions)
        if cranfield:
            out[f"{method} nDCG@10"] = nd / len(questions)
    return out


def suggestions(kb) -> dict[str, float]:
    res = kb.enrich.suggest_similarities(use_llm=False)
    co = [s for s in res["suggestions"] if s["source"] == "co-occurrence"]
    bad = sum(s["keyword1"].lower() in JUDGED_WEAK or s["keyword2"].lower() in JUDGED_WEAK for s in co)
    return {"co-occurrence": float(len(co)), "co weak": bad / max(1, len(co))}


def generated_keywords(res: dict[str, Any]) -> dict[str, list[str]]:
    return {d["filepath"]: d.get("generated_keywords", []) for d in res["documents"]}


def hand_keywords(folder: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for path in folder.rglob("*.keywords.json"):
        rel = path.relative_to(folder).as_posix().removesuffix(".keywords.json") + ".md"
        out[rel] = json.loads(path.read_text(encoding="utf-8"))["keywords"]
    for path in folder.rglob("*.md"):   # front-matter keywords (the markov note)
        raw = path.read_text(encoding="utf-8")
        m = re.match(r"---\nkeywords: \[(.*?)\]\n", raw)
        if m:
            out[path.relative_to(folder).as_posix()] = [k.strip() for k in m.group(1).split(",")]
    return out


def measure(name: str, tmp: Path) -> dict[str, Any]:
    notes, questions = collection(name)
    stem = stemmer()
    out: dict[str, Any] = {"notes": len(notes), "questions": len(questions)}
    kb = write_kb(notes, tmp / f"{name}-stripped", stripped=True)
    res = kb.enrich.documents(all_=True, use_llm=False)
    kb.close()
    gold = hand_keywords(REPO / "knowledge-base") if name == "bundled" else None
    out.update(quality(notes, generated_keywords(res), stem, gold))
    kb = write_kb(notes, tmp / f"{name}-full", stripped=False)
    before = retrieval(kb, questions, name == "cranfield")
    t, cpu = time.perf_counter(), time.process_time()
    res = kb.enrich.documents(all_=True, use_llm=False)
    secs, cpu = time.perf_counter() - t, time.process_time() - cpu
    out["docs/s"] = res["enriched"] / secs
    out["docs/cpu-s"] = res["enriched"] / cpu
    after = retrieval(kb, questions, name == "cranfield")
    out.update({f"{k} (none)": v for k, v in before.items()})
    out.update({f"{k} (enriched)": v for k, v in after.items()})
    out.update(suggestions(kb))
    out["examples"] = {fp: kws[:8] for fp, kws in sorted(generated_keywords(res).items())[:40]}
    kb.close()
    return out


def worker(names: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="kbindex-enrichkw-") as tmp:
        print(json.dumps({n: measure(n, Path(tmp)) for n in names}))


# ------------------------------------------------------------------------------------------------- the run
def baseline_code(rev: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "kb_indexer"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def run_version(code: Path, names: list[str]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(code)}
    proc = subprocess.run([sys.executable, __file__, "--worker", str(code), "--only", ",".join(names)], env=env,
                          capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"worker for {code} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout)


def table(results: dict[str, dict[str, Any]], names: list[str]) -> None:
    versions = list(results)
    for name in names:
        keys = [k for k in results[versions[-1]][name] if k != "examples"]
        print(f"\n## {name}")
        print(f"{'metric':<28}" + "".join(f"{v:>14}" for v in versions))
        for k in keys:
            vals = [results[v][name].get(k) for v in versions]
            if all(x is None for x in vals):
                continue
            print(f"{k:<28}" + "".join(f"{x:>14.4f}" if isinstance(x, float) else f"{x!s:>14}" for x in vals))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--baseline", default="main", help="revision to compare with ('none': this checkout only)")
    p.add_argument("--only", default=",".join(COLLECTIONS))
    p.add_argument("--examples", action="store_true", help="print the first keywords of some notes")
    p.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    names = [n for n in args.only.split(",") if n]
    if args.worker:
        sys.path[:0] = [str(args.worker)]
        worker(names)
        return 0
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="kbindex-baseline-") as tmp:
        if args.baseline != "none":
            results[args.baseline] = run_version(baseline_code(args.baseline, Path(tmp)), names)
        results["this checkout"] = run_version(REPO, names)
    table(results, names)
    if args.examples:
        for version, res in results.items():
            for name in names:
                print(f"\n# {version}: {name}")
                for fp, kws in list(res[name]["examples"].items())[:20]:
                    print(f"  {fp}: {', '.join(kws)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
