#!/usr/bin/env python3
"""Long synthetic conversations with planted facts, for measuring what context compression keeps.

A user works through topics of the knowledge base with an assistant: questions about document sections,
follow-ups, acknowledgements ("thanks", "hmm, go on"), repeated or rephrased questions, typos and filler.
The assistant answers with sentences, lists and code blocks taken from the markdown documents, and now and
then ends on a clarifying question. The conversation is long and mostly topical filler on purpose: it is
what a compressor (an LLM summary, an extractive summariser, or plain truncation to a token budget) has to
shrink.

Into that filler the generator plants facts, about one every 4-6 exchanges from the very first ones on
(early facts are the ones truncation loses): user preferences, decisions, results and names. Each fact
lists ``must_survive`` strings (the slot values: "Korean", "0.73", "Dana Whitfield") that occur in the
message the fact was planted in and, compared case-insensitively, in no other message, in no skill and in
no other fact: a string found in the compressed context can only have come from that fact. Slots are
re-drawn until that holds. A fact is its own message, or sits before or after other text in one; its
``turn`` is its index in ``messages`` (one system message, ``turns`` user/assistant exchanges, then the
latest user question: 2 * turns + 2 messages). Each fact template is used once per conversation before any
is used again: up to ten facts of a kind, no fact overrules an earlier one (no second "keep answers under").

Two families, ``dev`` and ``heldout``, share the filler but have their own fact templates, their own
connectors ("By the way, ..." vs "Oh, and ...") and disjoint slot vocabularies, so that a compressor
tuned on ``dev`` meets different wording and different values on ``heldout``. Each conversation also
carries 3-6 made-up skills (markdown instructions, priority ``active`` or ``relevant``) that a context
builder may place next to the conversation. Everything is deterministic by (family, seed, turns), uses
only the standard library, and knows nothing about any particular compressor. The wording (templates, slot
vocabularies, filler phrases, skills) lives in bench/context_conv_phrases.py; this module assembles it.

    python3 bench/context_conv.py                       # summary of the dev and heldout sets
    python3 bench/context_conv.py --family dev --dump conversations.json
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
import sys
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.context_conv_phrases import (ACKS, AGAIN, CHAT, CONNECTORS, FOLLOW_UPS, GO_ON, KINDS, NO,  # noqa: E402
                                        OFFERS, OPENERS, QUESTIONS, REPEATS, SKILL_EXTRAS, SKILLS, STATUS_PROMPTS,
                                        SYSTEM, TEMPLATES, VOCAB, WELCOME, YES)

KB_ROOT = REPO / "knowledge-base"
FAMILIES = ("dev", "heldout")
SLOT = "\x00FACT\x00"  # where a fact goes, until its slots are drawn


@dataclass
class Section:
    """One heading of a document: its units, each a sentence or a block (list, code, formula) kept whole."""
    doc: int
    title: str
    heading: str
    units: list[str] = field(default_factory=list)

    def add(self, unit: str, block: bool) -> None:
        if block and self.units and self.units[-1].endswith(":"):
            self.units[-1] += "\n\n" + unit  # "...updates:" and the formula or list it introduces
        elif unit:
            self.units.append(unit)


SKIP_HEADINGS = {"summary", "conclusion", "conclusions", "references", "see also"}


def _parse_doc(text: str, doc: int, title: str) -> list[Section]:
    """Split one markdown document into sections of sentences, lists, code blocks and formulas."""
    sections = [Section(doc, title, title)]
    para: list[str] = []
    lines: list[str] = []  # an open code block or list
    for line in text.splitlines() + [""]:
        in_code = bool(lines) and lines[0].startswith("```")
        if in_code or (line.startswith("```") and not lines):
            lines.append(line)
            if in_code and line.startswith("```"):
                sections[-1].add("\n".join(lines), True)
                lines = []
            continue
        is_item = re.match(r"\s*(?:[-*]|\d+\.)\s+\S", line)
        if lines and not is_item:
            sections[-1].add("\n".join(lines), True)
            lines = []
        ends_paragraph = not line.strip() or is_item or line.startswith("#")
        if para and ends_paragraph:
            joined = " ".join(para)
            if re.search(r"[.!?:]$", joined):
                for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z`*])", joined):
                    sections[-1].add(sentence.strip(), False)
            else:
                sections[-1].add(joined, True)  # a formula or a stray line
            para = []
        if line.startswith("# ") and not sections[-1].units and len(sections) == 1:
            sections[0].heading = sections[0].title = line[2:].strip()
        elif line.startswith("#"):
            sections.append(Section(doc, sections[0].title, line.lstrip("#").strip()))
        elif is_item:
            lines.append(line.strip())
        elif line.strip():
            para.append(line.strip())
    return [s for s in sections if s.units and s.heading.lower() not in SKIP_HEADINGS]


@lru_cache(maxsize=8)
def load_kb(kb_root: str) -> tuple[Section, ...]:
    """Sections of every markdown document under kb_root (sorted by path, so the order is stable)."""
    sections: list[Section] = []
    for i, path in enumerate(sorted(Path(kb_root).rglob("*.md"))):
        title = path.stem.replace("-", " ").replace("_", " ")
        sections += _parse_doc(path.read_text(encoding="utf-8", errors="replace"), i, title)
    if len(sections) < 2:
        raise ValueError(f"too little text under {kb_root} to build conversations from")
    return tuple(sections)


def _casual(heading: str) -> str:
    """'Trust Regions and PPO' -> 'trust regions and PPO' (keeps acronyms and CamelCase)."""
    def word(w: str) -> str:
        return w.lower() if w[:1].isupper() and w[1:].islower() else w
    return " ".join("-".join(word(part) for part in w.split("-")) for w in heading.split())


def _typo(rng: random.Random, text: str) -> str:
    words = text.split(" ")
    long_ones = [i for i, w in enumerate(words) if len(w) >= 5 and w.isalpha()]
    if not long_ones:
        return text
    i = rng.choice(long_ones)
    w, j = words[i], rng.randrange(1, len(words[i]) - 2)
    words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2:] if rng.random() < 0.6 else w[:j] + w[j + 1:]
    return " ".join(words)


def _join(units: list[str]) -> str:
    out = units[0]
    for prev, unit in zip(units, units[1:]):
        out += (" " if "\n" not in prev + unit else "\n\n") + unit
    return out


class _Dialogue:
    """Filler exchanges about the knowledge base; facts are left as SLOT markers for _plant."""

    def __init__(self, rng: random.Random, sections: tuple[Section, ...]):
        self.rng, self.sections = rng, sections
        self.current: Section | None = None
        self.pos = 0
        self.pending: Section | None = None
        self.asked: list[tuple[Section, str]] = []
        self.last_answer = ""

    def _sibling(self, sec: Section) -> Section:
        same = [s for s in self.sections if s.doc == sec.doc and s is not sec]
        return self.rng.choice(same or [s for s in self.sections if s is not sec])

    def _fill(self, templates: list[str], sec: Section) -> str:
        if sec.heading == sec.title:  # the document's opening: no "X in X"
            templates = [t for t in templates if "{t}" not in t] or templates
        words = sorted(set(re.findall(r"\b[a-z][a-z-]{8,}\b", self.last_answer))) or ["that"]
        return self.rng.choice(templates).format(h=_casual(sec.heading), t=_casual(sec.title),
                                                 term=self.rng.choice(words))

    def _user(self, templates: list[str], sec: Section) -> str:
        text = self._fill(templates, sec)
        if self.rng.random() < 0.15:
            text = _typo(self.rng, text)
        if self.rng.random() < 0.1:
            text = text.lower().rstrip("?")
        return text

    def answer(self, sec: Section, start: int, lead: str | None = None, offer: bool = True) -> str:
        rng = self.rng
        units = sec.units[start:start + rng.randint(2, 8)] or sec.units[:3]
        self.current, self.pos = sec, start + len(units)
        if rng.random() < 0.15 and len(units) >= 3 and not any("\n" in u for u in units):
            body = "The main points:\n\n" + "\n".join(f"{i}. {u}" for i, u in enumerate(units, 1))
        else:
            body = _join(units)
        lead = rng.choice(OPENERS) if lead is None else lead
        if lead.strip() and re.match(r"- |\d+\. |```", body):
            lead = lead.rstrip() + "\n\n"  # a list or code block starts on its own line
        text = lead + body
        self.pending = None
        if offer and rng.random() < 0.25:
            self.pending = self._sibling(sec)
            text += "\n\n" + self._fill(OFFERS, self.pending)
        self.last_answer = text
        return text

    def new_question(self) -> tuple[str, str]:
        rng = self.rng
        if self.current is not None and rng.random() < 0.5:
            sec = self._sibling(self.current)
        else:
            sec = rng.choice(self.sections)
        question = self._user(QUESTIONS, sec)
        self.asked.append((sec, question))
        return question, self.answer(sec, 0)

    def exchange(self) -> tuple[str, str]:
        rng, cur = self.rng, self.current
        if self.pending is not None and rng.random() < 0.8:
            if rng.random() < 0.75:
                return rng.choice(YES), self.answer(self.pending, 0)
            self.pending = None
            return rng.choice(NO), "No problem. Let me know what you'd like to look at next."
        move = rng.choices(["new", "follow", "chat", "more", "repeat"], [35, 25, 15, 8, 8 if self.asked else 0])[0]
        if move == "new" or cur is None:
            return self.new_question()
        if move == "follow":
            nxt = (cur, self.pos) if self.pos < len(cur.units) else (self._sibling(cur), 0)
            return self._user(FOLLOW_UPS, self._sibling(cur)), self.answer(*nxt)
        if move == "more":
            if self.pos < len(cur.units):
                return rng.choice(GO_ON), self.answer(cur, self.pos)
            sec = self._sibling(cur)
            lead = f"That covers {_casual(cur.heading)}. Next up, {_casual(sec.heading)}.\n\n"
            return rng.choice(GO_ON), self.answer(sec, 0, lead)
        if move == "repeat":
            sec, earlier = rng.choice(self.asked)
            question = earlier if rng.random() < 0.3 else self._user(REPEATS, sec)
            return question, self.answer(sec, rng.choice([0, 1]), rng.choice(AGAIN), offer=False)
        reply = rng.choice(WELCOME)
        if rng.random() < 0.4:
            self.pending = self._sibling(cur)
            reply += " If you like, we can look at " + _casual(self.pending.heading) + " next."
        return rng.choice(CHAT), reply


def _plan(rng: random.Random, family: str, turns: int) -> dict[int, tuple]:
    """Exchange index -> (kind, role, mode, template): about one fact every 4-6 exchanges, the kinds in
    turn, and within a kind every template once (in random order) before any comes back."""
    plan, k, kinds, decks = {}, rng.randint(0, 1), [], {}
    while k < turns:
        if not kinds:
            kinds = rng.sample(KINDS, len(KINDS))
        kind = kinds.pop()
        if not decks.get(kind):
            decks[kind] = rng.sample(TEMPLATES[family][kind], len(TEMPLATES[family][kind]))
        template = decks[kind].pop()
        role = template[0] if template[0] != "any" else rng.choice(["user", "assistant"])
        plan[k] = (kind, role, rng.choice(["alone", "before", "after", "after"]), template)
        k += rng.randint(4, 6)
    return plan


def _dialogue(rng: random.Random, sections: tuple[Section, ...], turns: int, plan: dict) -> list[dict]:
    """The messages, with SLOT where each planned fact goes (a fact planned before a short reply moves after it)."""
    talk = _Dialogue(rng, sections)
    messages = [{"role": "system", "content": rng.choice(SYSTEM)}]
    for k in range(turns):
        kind, role, mode, _ = plan.get(k, (None, None, None, None))
        if role == "user" and mode == "alone":
            user, assistant = SLOT, rng.choice(ACKS)
        elif role == "assistant" and mode == "alone":
            user, assistant = rng.choice(STATUS_PROMPTS[kind]), SLOT
        else:
            user, assistant = talk.exchange()
            if role == "user":
                if mode == "before" and len(user) < 30:  # not "<fact> sure, go ahead"
                    mode = "after"
                    plan[k] = (kind, role, mode, plan[k][3])
                end = "" if user[-1] in ".?!" else "."
                user = f"{SLOT} {user}" if mode == "before" else f"{user}{end} {SLOT}"
            elif role == "assistant":
                assistant = f"{SLOT}\n\n{assistant}" if mode == "before" else f"{assistant}\n\n{SLOT}"
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    messages.append({"role": "user", "content": talk.new_question()[0]})
    return messages


def _draw(rng: random.Random, family: str, template: str) -> dict[str, str]:
    vocab, values = VOCAB[family], {}
    for _, name, _, _ in string.Formatter().parse(template):
        if name and name.endswith("_alt"):
            base = name[:-4]
            values[name] = rng.choice([x for x in vocab[base] if x != values[base]])
        elif name:
            pool = vocab[name]
            values[name] = pool(rng) if callable(pool) else rng.choice(pool)
    return values


def _fact(rng: random.Random, family: str, kind: str, planned: tuple, role: str, mode: str, elsewhere: str,
          taken: list[str]) -> tuple[str, str, list[str]]:
    """(sentence as planted, text replacing SLOT, must_survive), with slots re-drawn until no must_survive
    string occurs elsewhere and no earlier fact's string occurs in it (then other templates, if need be)."""
    others = [t for t in TEMPLATES[family][kind] if t is not planned and t[0] in (role, "any")]
    for _, template, keys in [planned] + rng.sample(others, len(others)):
        for _ in range(200):
            values = _draw(rng, family, template)
            sentence, connector = template.format(**values), ""
            if mode == "after" and rng.random() < 0.8:
                connector = rng.choice(CONNECTORS[family][role])
                if not template.startswith(("{", "I ", "I'")):
                    sentence = sentence[0].lower() + sentence[1:]
            must = [values[k] for k in keys]
            placed = (connector + sentence).lower()
            if not any(m.lower() in elsewhere for m in must) and not any(t in placed for t in taken):
                return sentence, connector + sentence, must
    raise RuntimeError(f"no distinctive fact for {planned[1]!r} in this conversation")


def _plant(rng: random.Random, family: str, messages: list[dict], plan: dict, skills: list[dict]) -> list[dict]:
    facts: list[dict] = []
    for k, (kind, role, mode, template) in sorted(plan.items()):
        turn = 1 + 2 * k + (role == "assistant")
        elsewhere = "\n\x01\n".join([m["content"].lower() for i, m in enumerate(messages) if i != turn]
                                    + [s["content"].lower() for s in skills])
        taken = [m.lower() for f in facts for m in f["must_survive"]]
        text, placed, must = _fact(rng, family, kind, template, role, mode, elsewhere, taken)
        messages[turn]["content"] = messages[turn]["content"].replace(SLOT, placed)
        facts.append({"kind": kind, "turn": turn, "role": role, "text": text, "must_survive": must})
    return facts


def _skills(rng: random.Random) -> list[dict]:
    n = rng.randint(3, 6)
    priorities = ["active", "relevant"] + [rng.choice(["active", "relevant"]) for _ in range(n - 2)]
    rng.shuffle(priorities)
    out = []
    for (name, summary, steps, notes, example), priority in zip(rng.sample(SKILLS, n), priorities):
        kept = steps[:rng.randint(max(3, len(steps) - 2), len(steps))]
        parts = [f"# {name}", summary, "## When to use",
                 f"Use this skill when the user asks to {summary[0].lower() + summary[1:].rstrip('.')}, or when "
                 "a task clearly needs it. Do not use it for unrelated questions.",
                 "## Steps", "\n".join(f"{i}. {s}." for i, s in enumerate(kept, 1))]
        if rng.random() < 0.7:
            parts += ["## Example", f"```bash\n{example}\n```"]
        for heading, texts in SKILL_EXTRAS.items():
            if rng.random() < 0.4:
                parts += [heading, rng.choice(texts)]
        parts += ["## Notes", "\n".join(f"- {x}." for x in rng.sample(notes, rng.randint(1, len(notes))))]
        out.append({"name": name, "content": "\n\n".join(parts) + "\n", "priority": priority})
    return out


def generate(seed: int, turns: int, family: str = "dev", kb_root: Path | None = None) -> dict:
    """One conversation: a system message, `turns` user/assistant exchanges, then the latest user question
    (2 * turns + 2 messages), with its planted facts and 3-6 skills. Same arguments, same conversation."""
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, not {family!r}")
    if turns < 1:
        raise ValueError("turns must be at least 1")
    rng = random.Random(f"{family}:{seed}:{turns}")
    sections = load_kb(str(Path(kb_root or KB_ROOT).resolve()))
    plan = _plan(rng, family, turns)
    skills = _skills(rng)
    messages = _dialogue(rng, sections, turns, plan)
    facts = _plant(rng, family, messages, plan, skills)
    return {"id": f"{family}-{seed}-{turns}", "family": family, "seed": seed, "turns": turns,
            "messages": messages, "facts": facts, "skills": skills}


def generate_set(family: str, sizes=(20, 60, 120, 200), seeds=range(3), kb_root: Path | None = None) -> list[dict]:
    return [generate(seed, turns, family, kb_root) for turns in sizes for seed in seeds]


def summary_line(conv: dict) -> str:
    kinds = Counter(f["kind"] for f in conv["facts"])
    chars = sum(len(m["content"]) for m in conv["messages"])
    by_kind = " ".join(f"{k[0]}={kinds.get(k, 0)}" for k in KINDS)
    return (f"{conv['id']:<16} messages={len(conv['messages']):>4} chars={chars:>7} "
            f"facts={len(conv['facts']):>3} ({by_kind}) skills={len(conv['skills'])}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", choices=[*FAMILIES, "both"], default="both")
    parser.add_argument("--sizes", default="20,60,120,200", help="comma-separated turn counts")
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1")
    parser.add_argument("--kb", type=Path, default=None, help="knowledge base folder (default: knowledge-base/)")
    parser.add_argument("--dump", type=Path, default=None, help="write the conversations as JSON to this file")
    args = parser.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    families = FAMILIES if args.family == "both" else (args.family,)
    convs = [c for fam in families for c in generate_set(fam, sizes, range(args.seeds), args.kb)]
    for conv in convs:
        print(summary_line(conv))
    if args.dump:
        args.dump.write_text(json.dumps(convs, ensure_ascii=False, indent=1), encoding="utf-8")
        print(f"wrote {len(convs)} conversations to {args.dump}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
