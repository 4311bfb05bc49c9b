"""Context compression: how many planted facts survive, at each level, beside plain truncation.

    python3 bench/context_eval.py                        # dev and heldout conversations, extractive + scripted
    python3 bench/context_eval.py --llm-backend openai   # also the configured backend (--llm-model, --llm-limit N)
    python3 bench/context_eval.py --sizes 20,60 --seeds 2 --json out.json

What it measures (one process, the code path of ``kbindex context compress``: KnowledgeBase.context.compress
on a throw-away index, which holds the LLM cache):

1. Conversations from :mod:`bench.context_conv` (20-200 exchanges built from the bundled knowledge base,
   with planted user preferences, decisions, results and names, each with the exact strings that must
   survive). ``dev`` conversations are the ones the extractive scorer was tuned on; ``heldout`` ones use
   other templates and vocabularies and were not looked at while tuning.
2. For each level (80, 90, 95) the window is set so the conversation (messages + skills) uses 82%, 92% or
   97% of it, and the conversation is compressed by:
   * ``extractive``: no LLM (the fallback every user without an LLM gets);
   * ``scripted``: an LLM double (defined here, not shipped) that answers every summary request with the
     first sentences of the transcript it was sent, up to the requested size: it exercises the LLM path
     (chunking, validation, cache) but says nothing about summary quality;
   * the configured backend (``--llm-backend``), when given.
3. A fact survives when every one of its strings occurs (ignoring case) in the compressed context
   (messages and skills). ``truncation`` keeps the system message, the same skills, and the newest messages
   that fit in the same number of tokens as the compressed output: the baseline. Because the extractive
   summary stops when no sentence qualifies (it does not pad to the level's target), a second column
   gives truncation the level's whole budget (as if the summary had used all of it): a stricter baseline.
4. The same compression is run a second time: every LLM request must come from the cache (``repeat hits``).

Printed per family and level: tokens before/after and ratio, facts kept by the method and by truncation to
the same budget, their ratio, whether the output was within the token target (under 80% of the window,
history summary within its budget), LLM calls, cache hits on the repeat, and wall time per compression.
Target: extractive keeps at least twice the facts truncation keeps at the 80% and 90% levels.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

LEVELS = (80, 90, 95)
USAGE = {80: 0.82, 90: 0.92, 95: 0.97}


class ScriptedSummariser:
    """An LLM double: the summary is the transcript's first sentences, up to the requested token count."""

    name = "scripted"
    model = "lead-sentences"

    def __init__(self) -> None:
        self.calls = 0

    def complete_json(self, messages, schema, *, task, max_tokens, temperature, timeout):
        from kb_indexer.llm.base import Completion
        from kb_indexer.tokens import estimate_tokens
        self.calls += 1
        prompt = messages[-1].content
        target = int(re.search(r"at most (\d+) tokens", prompt).group(1))
        body = prompt.split("Conversation:\n", 1)[-1] if "Conversation:\n" in prompt else prompt
        body = body.rsplit("\n\nAnswer with", 1)[0]
        out = []
        for sentence in re.split(r"(?<=[.!?])\s+", body):
            if estimate_tokens(" ".join(out + [sentence])) > target * 0.95:
                break
            out.append(sentence)
        return Completion(text=json.dumps({"summary": " ".join(out) or body[:target * 3]}))

    def chat(self, *a, **k):  # pragma: no cover - not used
        raise NotImplementedError

    def probe(self, timeout):  # pragma: no cover - not used
        raise NotImplementedError

    def close(self) -> None:
        pass


def context_text(out: dict[str, Any]) -> str:
    parts = [str(m.get("content") or "") for m in out["messages"]]
    parts += [str(s.get("content") or "") for s in out["skills"]]
    return "\n".join(parts).lower()


def kept_facts(facts: list[dict[str, Any]], text: str) -> int:
    return sum(all(s.lower() in text for s in f["must_survive"]) for f in facts)


def truncation(conv: dict[str, Any], out: dict[str, Any], tokens: int | None = None) -> dict[str, Any]:
    """System message + the compressed output's skills + the newest messages in ``tokens`` in all (default:
    as many as the compressed output has)."""
    from kb_indexer.context.compress import total_tokens
    from kb_indexer.context.extractive import truncate
    systems = [m for m in conv["messages"] if m["role"] == "system"]
    rest = [m for m in conv["messages"] if m["role"] != "system"]
    budget = (out["stats"]["tokens_after"] if tokens is None else tokens) - total_tokens(systems, out["skills"])
    kept, _ = truncate(rest, budget)
    return {"messages": systems + kept, "skills": out["skills"]}


def level_budget(out: dict[str, Any]) -> int:
    """The tokens the output would have had if the first history stage had used its whole budget."""
    st = out["stats"]
    first = next((s for s in st["stages"] if s["stage"] == "history" and "budget" in s), None)
    if first is None:
        return st["tokens_after"]
    return st["tokens_after"] + max(0, first["budget"] - first["summary_tokens"])


def make_client(kind: str, kb: Any, args: argparse.Namespace):
    from kb_indexer.llm.config import LLMOptions
    from kb_indexer.llm.structured import LLMClient
    if kind == "extractive":
        return None
    if kind == "scripted":
        from kb_indexer.llm.settings import LLMConfig
        return LLMClient(LLMConfig("scripted", "lead-sentences"), conn=kb.conn, backend=ScriptedSummariser())
    return LLMClient.from_options(LLMOptions(backend=args.llm_backend, model=args.llm_model,
                                             timeout=args.llm_timeout), kb.conn)


def run_one(kb: Any, conv: dict[str, Any], level: int, kind: str, args: argparse.Namespace) -> dict[str, Any]:
    from kb_indexer.context.compress import total_tokens
    tokens = total_tokens(conv["messages"], conv["skills"])
    window = int(tokens / USAGE[level])
    payload = {"messages": conv["messages"], "skills": conv["skills"]}
    client = make_client(kind, kb, args)
    started = time.perf_counter()
    out = kb.context.compress(payload, window=window, use_llm=client is not None, client=client)
    elapsed = (time.perf_counter() - started) * 1000
    again = kb.context.compress(payload, window=window, use_llm=client is not None, client=client)
    if client is not None:
        client.close()
    st = out["stats"]
    history = [s for s in st["stages"] if s["stage"] == "history" and "budget" in s]
    within = st["tokens_after"] * 100 < 80 * window and all(s["summary_tokens"] <= s["budget"] + 24 for s in history)
    facts = conv["facts"]
    trunc = truncation(conv, out)
    requests = again["stats"]["llm_calls"] + again["stats"]["cache_hits"]
    text = context_text(out)
    by_kind: dict[str, list[int]] = {}
    for f in facts:
        seen = by_kind.setdefault(f["kind"], [0, 0])
        seen[0] += all(s.lower() in text for s in f["must_survive"])
        seen[1] += 1
    return {"id": conv["id"], "family": conv["family"], "level": level, "method": kind, "window": window,
            "achieved_level": st["level"], "tokens_before": st["tokens_before"], "tokens_after": st["tokens_after"],
            "ratio": st["ratio"], "facts": len(facts), "kept": kept_facts(facts, context_text(out)),
            "kept_truncation": kept_facts(facts, context_text(trunc)),
            "kept_truncation_target": kept_facts(facts, context_text(truncation(conv, out, level_budget(out)))),
            "within_target": within,
            "llm_calls": st["llm_calls"], "repeat_requests": requests, "repeat_hits": again["stats"]["cache_hits"],
            "fallback": st["fallback"], "ms": round(elapsed, 1),
            "sources": sorted({s.get("source") for s in history if s.get("source")}), "by_kind": by_kind}


def summarise_rows(rows: list[dict[str, Any]]) -> dict[str, Any]:
    facts = sum(r["facts"] for r in rows)
    kept, trunc = sum(r["kept"] for r in rows), sum(r["kept_truncation"] for r in rows)
    requests = sum(r["repeat_requests"] for r in rows)
    return {"n": len(rows), "before": statistics.mean(r["tokens_before"] for r in rows),
            "after": statistics.mean(r["tokens_after"] for r in rows),
            "ratio": statistics.mean(r["ratio"] for r in rows), "kept": kept / facts if facts else 0.0,
            "kept_truncation": trunc / facts if facts else 0.0, "x": (kept / trunc) if trunc else float("inf"),
            "kept_truncation_target": sum(r["kept_truncation_target"] for r in rows) / facts if facts else 0.0,
            "within": sum(r["within_target"] for r in rows), "llm_calls": sum(r["llm_calls"] for r in rows),
            "repeat_hit_rate": (sum(r["repeat_hits"] for r in rows) / requests) if requests else None,
            "ms": statistics.median(r["ms"] for r in rows)}


def print_table(rows: list[dict[str, Any]]) -> None:
    print("| family | level | method | convs | tokens before → after | ratio | facts kept | truncation, same "
          "budget | × | truncation, level's full budget | within target | LLM calls | repeat cache hits | "
          "ms (median) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    keys = sorted({(r["family"], r["level"], r["method"]) for r in rows},
                  key=lambda k: (k[0] != "dev", k[1], k[2]))
    for family, level, method in keys:
        s = summarise_rows([r for r in rows if (r["family"], r["level"], r["method"]) == (family, level, method)])
        hits = "–" if s["repeat_hit_rate"] is None else f"{s['repeat_hit_rate']:.0%}"
        print(f"| {family} | {level}% | {method} | {s['n']} | {s['before']:,.0f} → {s['after']:,.0f} | "
              f"{s['ratio']:.3f} | {s['kept']:.1%} | {s['kept_truncation']:.1%} | {s['x']:.2f} | "
              f"{s['kept_truncation_target']:.1%} | "
              f"{s['within']}/{s['n']} | {s['llm_calls']} | {hits} | {s['ms']:.1f} |")


def print_kinds(rows: list[dict[str, Any]]) -> None:
    """Facts kept by kind, per family and method, all levels together."""
    print("\n| family | method | preference | decision | result | name |")
    print("|---|---|---|---|---|---|")
    for family, method in sorted({(r["family"], r["method"]) for r in rows}, key=lambda k: (k[0] != "dev", k[1])):
        cells = []
        for kind in ("preference", "decision", "result", "name"):
            kept = sum(r["by_kind"].get(kind, [0, 0])[0] for r in rows if (r["family"], r["method"]) == (family, method))
            total = sum(r["by_kind"].get(kind, [0, 0])[1] for r in rows if (r["family"], r["method"]) == (family, method))
            cells.append(f"{kept / total:.0%} of {total}" if total else "–")
        print(f"| {family} | {method} | " + " | ".join(cells) + " |")


def main(argv: list[str] | None = None) -> int:
    from bench.context_conv import generate_set
    from kb_indexer.api import KnowledgeBase

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="20,60,120,200", help="exchanges per conversation")
    ap.add_argument("--seeds", type=int, default=3, help="conversations per size and family")
    ap.add_argument("--families", default="dev,heldout")
    ap.add_argument("--methods", default="extractive,scripted")
    ap.add_argument("--llm-backend")
    ap.add_argument("--llm-model")
    ap.add_argument("--llm-timeout", type=float, default=120.0)
    ap.add_argument("--llm-limit", type=int, default=4, help="conversations per family for the real backend")
    ap.add_argument("--json", type=Path, help="write every row here")
    args = ap.parse_args(argv)
    sizes = tuple(int(s) for s in args.sizes.split(","))
    methods = args.methods.split(",") + ([args.llm_backend] if args.llm_backend else [])
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        kb, _ = KnowledgeBase.init(Path(tmp) / "kbindex.db", Path(tmp))
        for family in args.families.split(","):
            convs = generate_set(family, sizes=sizes, seeds=range(args.seeds))
            for method in methods:
                chosen = convs[:args.llm_limit] if method == args.llm_backend else convs
                for conv in chosen:
                    for level in LEVELS:
                        rows.append(run_one(kb, conv, level, method, args))
        kb.close()
    print_table(rows)
    print_kinds(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
