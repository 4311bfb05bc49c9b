"""Compression of a chat context (messages and loaded skills) at 80 / 90 / 95% of the model's window.

The level is the highest threshold the estimated usage reaches (``tokens * 100 >= threshold * window``,
so 80% of the window is level 80, one token less is not). Each level has its stages, run in order; the
usage is estimated again after each and compression stops as soon as it is under 80% of the window:

====== ===================================================================================
level  stages
====== ===================================================================================
80     ``history`` to about 50% of its tokens
90     ``history`` to about 30%; ``drop_relevant_skills`` (least important first)
95     ``history`` to about 20% (the summary at most 15%); ``drop_relevant_skills`` (only
       active skills stay); ``compress_skills`` (active skills' content to about half)
====== ===================================================================================

When a level's stages are not enough, the next level's run too; after the 95% stages the ``history``
stage runs once more with no recent messages kept beyond the last assistant question and the latest user
message. What is left over the window is reported (``stats.over_window``), never cut from the system
message or the latest user message.

The history stage never touches the system messages, the latest user message or the last ``keep_last``
messages; the tail kept verbatim starts with an assistant message (extended backwards if needed), so the
summary, one ``user`` message marked ``[Summary of the earlier conversation ...]``, keeps the roles
alternating and no tool result loses its call. The summary comes from the LLM (chunked so each call fits
the model, cached), else the extractive summariser (:mod:`kb_indexer.context.extractive`), else the
newest older messages that fit (truncation) with a note of how many were dropped; ``stats.fallback`` and
``stats.stages`` say which. A summary is never longer than what it replaces.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from kb_indexer.context import extractive, fit
from kb_indexer.context.extractive import SUMMARY_MARK
from kb_indexer.context.llm_summary import compress_skill, summarise_history, SummaryFailed, transcript
from kb_indexer.context.store import ends_with_question
from kb_indexer.tokens import estimate_tokens, message_tokens, messages_tokens

THRESHOLDS = (80, 90, 95)
TARGET = 80                         # compression stops once usage is under this percentage
RATIOS = {80: 0.50, 90: 0.30, 95: 0.15}
SKILL_RATIO = 0.5
DEFAULT_KEEP_LAST = 4
LEVEL_STAGES = {80: ("history",), 90: ("history", "drop_relevant_skills"),
                95: ("history", "drop_relevant_skills", "compress_skills")}


@dataclass
class CompressOptions:
    window: int
    keep_last: int = DEFAULT_KEEP_LAST
    client: Any = None               # an LLMClient, or None: extractive only
    no_llm_reason: str | None = None


#: Invalid (or too long) answers one after another after which a compression stops asking the LLM (an outage
#: stops it at once): 60 chunks against a model that answers badly took 53 calls, each up to the timeout.
BAD_ANSWERS_MAX = 3
SUMMARY_NOTE_TOKENS = 24   # the summary's first line (its mark) and its message framing


@dataclass
class State:
    messages: list[dict[str, Any]]
    skills: list[dict[str, Any]]
    opts: CompressOptions
    stages: list[dict[str, Any]] = field(default_factory=list)
    fallback: list[str] = field(default_factory=list)
    dropped_skills: list[str] = field(default_factory=list)
    llm_calls: int = 0               # requests sent to the server (answered or failed), not cache hits
    llm_failures: int = 0
    cache_hits: int = 0
    usage: list[dict[str, Any]] = field(default_factory=list)
    llm_failed: str | None = None
    llm_bad_in_a_row: int = 0         # invalid answers one after another (BAD_ANSWERS_MAX: the LLM is given up)
    sentences: dict[int, extractive.Sentences] = field(default_factory=dict)  # each message split and scored once
    cut_messages: list[int] = field(default_factory=list)
    cut_skills: list[str] = field(default_factory=list)


def skill_tokens(skill: dict[str, Any]) -> int:
    return estimate_tokens(f"## Skill: {skill.get('name', '')}\n\n{skill.get('content', '')}") + 4


def total_tokens(messages: list[dict[str, Any]], skills: list[dict[str, Any]]) -> int:
    return messages_tokens(messages) + sum(skill_tokens(s) for s in skills)


def level_of(tokens: int, window: int) -> int:
    """The highest threshold reached (0: none)."""
    return max((t for t in THRESHOLDS if tokens * 100 >= t * window), default=0)


def _under_target(st: State) -> bool:
    return total_tokens(st.messages, st.skills) * 100 < TARGET * st.opts.window


def compress(messages: list[dict[str, Any]], skills: list[dict[str, Any]], opts: CompressOptions) -> dict[str, Any]:
    """The compressed ``{messages, skills, stats}`` (see the module docstring)."""
    before = total_tokens(messages, skills)
    level = level_of(before, opts.window)
    st = State([dict(m) for m in messages], [dict(s) for s in skills], opts)
    if level:
        _run_ladder(st, messages, level)
    if total_tokens(st.messages, st.skills) > opts.window:
        _fit_window(st)
    after = total_tokens(st.messages, st.skills)
    stats = {"tokens_before": before, "tokens_after": after, "ratio": round(after / before, 4) if before else 1.0,
             "window": opts.window, "usage_before": round(before / opts.window, 4),
             "usage_after": round(after / opts.window, 4), "level": level, "stages": st.stages,
             "llm_calls": st.llm_calls, "llm_failures": st.llm_failures, "cache_hits": st.cache_hits,
             "fallback": "; ".join(dict.fromkeys(st.fallback)) or None, "dropped_skills": st.dropped_skills,
             "over_window": after > opts.window, "cut_messages": st.cut_messages, "cut_skills": st.cut_skills,
             "token_counts": st.usage, "estimator": "tokens.estimate_tokens"}
    return {"messages": st.messages, "skills": st.skills, "stats": stats}


def _run_ladder(st: State, original: list[dict[str, Any]], level: int) -> None:
    for lvl in (t for t in THRESHOLDS if t >= level):
        for stage in LEVEL_STAGES[lvl]:
            if stage == "history":
                _history(st, original, lvl, st.opts.keep_last)
            elif stage == "drop_relevant_skills":
                _drop_relevant(st, everything=lvl >= 95)
            elif stage == "compress_skills":
                _compress_skills(st)
            if _under_target(st):
                return
    _history(st, original, 95, 0)


# -- history -------------------------------------------------------------------------------------------

def _tail_can_start(messages: list[dict[str, Any]], i: int) -> bool:
    """Whether the verbatim tail may start at ``i`` after a ``user`` summary without breaking what the
    input did: at an assistant message, or at a user message the input already put after a user message
    (runs of user messages, e.g. an agent that records only the user's turns). Never at a tool result."""
    role = messages[i].get("role")
    return role == "assistant" or (role == "user" and i > 0 and messages[i - 1].get("role") == "user")


def split_history(messages: list[dict[str, Any]], keep_last: int) -> tuple[list[int], int]:
    """(indexes of the older, replaceable messages; index where the verbatim tail starts)."""
    n = len(messages)
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if not users:
        return [], n
    start = min(max(0, n - keep_last), users[-1])
    assistants = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    if assistants and assistants[-1] < start and extractive_is_question(messages[assistants[-1]]):
        start = assistants[-1]
    while start > 0 and not _tail_can_start(messages, start):
        start -= 1
    if start == 0 or not _tail_can_start(messages, start):
        return [], n
    older = [i for i in range(start) if messages[i].get("role") != "system"]
    return older, start


def extractive_is_question(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return bool(message.get("is_question")) or (isinstance(content, str) and ends_with_question(content))


def _history(st: State, original: list[dict[str, Any]], level: int, keep_last: int) -> None:
    older_idx, start = split_history(original, keep_last)
    if not older_idx:
        st.stages.append({"stage": "history", "level": level, "skipped": "no older messages to replace"})
        return
    older = [original[i] for i in older_idx]
    replaced = messages_tokens(older)
    shortest = {"role": "user", "content": f"{SUMMARY_MARK} ({len(older)} messages, truncation; kbindex)]\n"
                                           f"({len(older)} earlier messages dropped)"}
    if message_tokens(shortest) >= replaced:  # no summary could be shorter: do not ask the LLM for one
        st.stages.append({"stage": "history", "level": level, "skipped": f"a summary would not be shorter than "
                          f"the {len(older)} older messages ({replaced} tokens) it replaces"})
        return
    budget = min(max(8, math.floor(RATIOS[level] * replaced)), _summary_room(st, original, start))
    text, source = _summary_text(st, older, budget, level)
    note = f"{SUMMARY_MARK} ({len(older)} messages, {source}; kbindex)]\n"
    summary = {"role": "user", "content": note + text}
    if message_tokens(summary) >= replaced:   # never longer than what it replaces
        text, source = _truncated(older, budget)
        summary = {"role": "user", "content": f"{SUMMARY_MARK} ({len(older)} messages, {source}; kbindex)]\n{text}"}
    if message_tokens(summary) >= replaced:   # even the note is not shorter: leave the history as it is
        st.stages.append({"stage": "history", "level": level, "skipped": f"a summary would not be shorter than "
                          f"the {len(older)} older messages ({replaced} tokens) it replaces"})
        return
    systems = [original[i] for i in range(start) if original[i].get("role") == "system"]
    st.messages = systems + [summary] + [dict(m) for m in original[start:]]
    st.stages.append({"stage": "history", "level": level, "ratio": RATIOS[level], "keep_last": keep_last,
                      "replaced_messages": len(older), "replaced_tokens": replaced, "budget": budget,
                      "summary_tokens": message_tokens(summary), "source": source,
                      "tokens_after": total_tokens(st.messages, st.skills)})


def _summary_room(st: State, original: list[dict[str, Any]], start: int) -> int:
    """The most a summary may take: what the window (80% of it when the input was over the window) leaves
    once the messages kept verbatim and the skills are counted, and at least a tenth of the window (a huge
    verbatim tail is then cut by :func:`_fit_window`). It binds only on input over the window: a summary of
    input that fits is at most half of the history it replaces."""
    kept = [m for m in original[:start] if m.get("role") == "system"] + original[start:]
    window = st.opts.window
    limit = window * TARGET // 100 if total_tokens(original, []) + total_tokens([], st.skills) > window else window
    return max(8, limit - total_tokens(kept, st.skills) - SUMMARY_NOTE_TOKENS, window // 10)


def _summary_text(st: State, older: list[dict[str, Any]], budget: int, level: int) -> tuple[str, str]:
    """(text, source): the LLM's, else the extractive one, else truncation."""
    if st.opts.client is not None and st.llm_failed is None:
        text = _llm_history(st, older, budget, level)
        if text is not None:
            return text, "llm"
    elif st.opts.client is None and st.opts.no_llm_reason:
        st.fallback.append(st.opts.no_llm_reason)
    text, kept = extractive.summarise(older, budget - 12, memo=st.sentences)
    if kept:
        return text, "extractive"
    st.fallback.append("no sentence worth keeping for an extractive summary: truncation")
    return _truncated(older, budget)


def _truncated(older: list[dict[str, Any]], budget: int) -> tuple[str, str]:
    kept, dropped = extractive.truncate(older, max(0, budget - 16))
    text = f"({dropped} earlier messages dropped)\n" + transcript(kept)
    if estimate_tokens(text) > budget:
        text = f"({len(older)} earlier messages dropped)"
    return text, "truncation"


def split_text(text: str, max_tokens: int) -> list[str]:
    """``text`` in consecutive pieces of at most ``max_tokens`` estimated tokens, cut between sentences
    where possible (CJK text, one token per character, is cut by tokens, not by characters)."""
    parts: list[str] = []
    current = ""
    for piece in re.split(r"(?<=[.!?。！？\n])\s+", text):
        if current and estimate_tokens(current + " " + piece) > max_tokens:
            parts.append(current)
            current = ""
        while estimate_tokens(piece) > max_tokens:
            n = max(1, fit.prefix_within(piece, max_tokens))   # at least one character a piece
            parts.append(piece[:n])
            piece = piece[n:]
        current = f"{current} {piece}" if current else piece
    if current:
        parts.append(current)
    return parts


def chunks(messages: list[dict[str, Any]], max_tokens: int) -> list[list[dict[str, Any]]]:
    """Consecutive groups of at most ``max_tokens``; a longer message is split into several groups (its
    pieces keep its role), so nothing of it is hidden from the summariser."""
    out: list[list[dict[str, Any]]] = [[]]
    used = 0
    for m in messages:
        cost = message_tokens(m)
        if cost > max_tokens:
            pieces = split_text(str(m.get("content") or ""), max(16, max_tokens - 8))
            out += [[dict(m, content=p)] for p in pieces] + [[]]
            used = 0
            continue
        if used + cost > max_tokens and out[-1]:
            out.append([])
            used = 0
        out[-1].append(m)
        used += cost
    return [c for c in out if c]


def _llm_history(st: State, older: list[dict[str, Any]], budget: int, level: int) -> str | None:
    """The LLM's summary, one call per chunk; a failed chunk gets the extractive summary. After an outage
    (server down, timeout), or ``BAD_ANSWERS_MAX`` invalid or too-long answers in a row, later chunks get it
    too: the LLM is not asked again. None if no chunk succeeded."""
    client = st.opts.client
    cap = client.config.max_tokens_cap
    size = max(256, min(st.opts.window // 2, int(cap / RATIOS[level] * 0.8)))
    parts, used_llm = [], False
    groups = chunks(older, size)
    for group in groups:
        share = max(8, math.floor(budget * messages_tokens(group) / max(1, messages_tokens(older))) - 2)
        if st.llm_failed is None:
            try:
                text, info = summarise_history(client, group, share, level=level, ratio=RATIOS[level])
                _count(st, info)
                parts.append(text)
                used_llm = True
                continue
            except SummaryFailed as exc:
                _failed(st, exc)
        parts.append(extractive.summarise(group, share)[0])
    return "\n".join(p for p in parts if p) if used_llm else None


def _failed(st: State, exc: SummaryFailed) -> None:
    st.llm_calls += 1
    st.llm_failures += 1
    st.llm_bad_in_a_row = 0 if exc.outage else st.llm_bad_in_a_row + 1
    if exc.outage:
        st.llm_failed = exc.reason
    elif st.llm_bad_in_a_row >= BAD_ANSWERS_MAX:   # a model that cannot do it: not asked for every chunk
        st.llm_failed = f"{BAD_ANSWERS_MAX} invalid answers in a row"
    note = f"LLM {st.opts.client.config.backend} failed: {exc.reason}; extractive summary"
    if note in st.fallback:   # said once; giving up is said on it
        st.fallback.remove(note)
    if st.llm_failed and not exc.outage:
        note += f" (given up after {BAD_ANSWERS_MAX} invalid answers in a row)"
    st.fallback.append(note)


def _count(st: State, info: dict[str, Any]) -> None:
    st.llm_bad_in_a_row = 0
    if info["cached"]:
        st.cache_hits += 1
    else:
        st.llm_calls += 1
    if info.get("usage"):
        st.usage.append({"estimate": info["prompt_tokens_estimate"], **info["usage"]})


# -- the last resort: cutting what is kept verbatim -----------------------------------------------------

def _fit_window(st: State) -> None:
    """Still over the window after the ladder: every text that alone exceeds its share of the window (messages
    of any role, the summary, skills' content) is cut to that share (:mod:`kb_indexer.context.fit`)."""
    texts: list[tuple[str, int, str]] = []    # (what, index, content)
    fixed = 0
    for i, m in enumerate(st.messages):
        content = m.get("content")
        if isinstance(content, str):
            texts.append(("message", i, content))
            fixed += message_tokens(m) - estimate_tokens(content)
        else:
            fixed += message_tokens(m)
    for i, s in enumerate(st.skills):
        content = str(s.get("content") or "")
        texts.append(("skill", i, content))
        fixed += estimate_tokens(f"## Skill: {s.get('name', '')}\n\n") + 4
    sizes = [estimate_tokens(t) for _, _, t in texts]
    cap = fit.share(sizes, max(0, st.opts.window - fixed))
    for (what, i, content), size in zip(texts, sizes):
        if size <= cap:
            continue
        if what == "message":
            st.messages[i] = dict(st.messages[i], content=fit.cut_text(content, cap))
            st.cut_messages.append(i)
        else:
            st.skills[i] = dict(st.skills[i], content=fit.cut_text(content, cap))
            st.cut_skills.append(str(st.skills[i].get("name")))
    st.stages.append({"stage": "cut_to_window", "share": cap, "cut_messages": list(st.cut_messages),
                      "cut_skills": list(st.cut_skills), "tokens_after": total_tokens(st.messages, st.skills)})


# -- skills --------------------------------------------------------------------------------------------

def _drop_relevant(st: State, everything: bool = False) -> None:
    """Drop ``relevant`` skills, the last given (least important) first: until under the target (90%), or
    all of them (``everything``, the 95% level: only active skills stay)."""
    dropped = []
    for skill in reversed(list(st.skills)):
        if not everything and _under_target(st):
            break
        if skill.get("priority", "active") == "relevant":
            st.skills.remove(skill)
            dropped.append(skill["name"])
    st.dropped_skills += dropped
    st.stages.append({"stage": "drop_relevant_skills", "dropped": dropped,
                      "tokens_after": total_tokens(st.messages, st.skills)})


def _compress_skills(st: State) -> None:
    """Active skills' content to about half, by the LLM or the extractive cut, largest first."""
    done = []
    for skill in sorted(st.skills, key=lambda s: -skill_tokens(s)):
        if _under_target(st):
            break
        content = str(skill.get("content") or "")
        budget = max(16, math.floor(estimate_tokens(content) * SKILL_RATIO))
        text, source = None, "extractive"
        if st.opts.client is not None and st.llm_failed is None:
            try:
                text, info = compress_skill(st.opts.client, skill["name"], content, budget)
                _count(st, info)
                source = "llm"
            except SummaryFailed as exc:
                _failed(st, exc)
        if text is None:
            text = extractive.compress_text(content, budget)
        if estimate_tokens(text) < estimate_tokens(content):
            skill.update(content=text, compressed=source)
            done.append({"name": skill["name"], "source": source})
    st.stages.append({"stage": "compress_skills", "compressed": done,
                      "tokens_after": total_tokens(st.messages, st.skills)})
