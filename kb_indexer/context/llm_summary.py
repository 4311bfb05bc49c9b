"""The LLM summariser: one structured, cached call per chunk of history, per rolling summary, per skill.

The prompts follow the design (compression-and-dynamic-skills-requirements.md, "Compression prompt
design"): they state the target (tokens and ratio, and the level: moderate at 80%, aggressive at 90%,
maximum at 95%), what to preserve (user preferences, decisions, results, active context; names and
numbers verbatim) and what to drop (redundancy, outdated context, irrelevant details). The answer is
``{"summary": "..."}``; it is refused (one repair attempt, then :class:`SummaryFailed`) when it is empty,
over the token target (10% slack) or not shorter than what it replaces. Caching is
:mod:`kb_indexer.llm.cache`'s: the key hashes the prompt, which holds the content, the level and the
target, with the backend and the model, so a 90% request never gets the 80% answer.
"""

from __future__ import annotations

from typing import Any, Callable

from kb_indexer.llm.base import LLMBadResponse, LLMError, Message
from kb_indexer.tokens import estimate_tokens

SLACK = 1.10
LEVEL_WORDS = {0: "rolling summary", 80: "moderate", 90: "aggressive", 95: "maximum"}
ROLE_LABELS = {"user": "User", "assistant": "Assistant", "tool": "Tool result", "system": "System"}

HISTORY_SYSTEM = (
    "You compress the earlier part of a conversation between a user and an assistant, so that the "
    "assistant can continue the conversation from your summary alone.\n"
    "Preserve: the user's preferences and standing instructions; decisions made (and what was rejected); "
    "results, numbers, names, identifiers and file paths, written exactly as in the conversation; the task "
    "in progress and any open question.\n"
    "Remove: greetings and acknowledgements, repetition, long explanations that can be given again, and "
    "context that later messages replaced.\n"
    "Write short factual sentences, oldest first, saying who said what (\"The user prefers ...\", "
    "\"They decided ...\"). Never invent anything.")
SKILL_SYSTEM = (
    "You compress the instructions of an agent skill so that an agent can still follow them.\n"
    "Preserve: the steps, commands, parameters, constraints and key examples, exactly as written.\n"
    "Remove: background, motivation, repetition and anything not needed to carry out the task.")


class SummaryFailed(Exception):
    """No usable summary from the LLM; ``reason`` says why (for ``stats.fallback``). ``outage``: the
    server could not be used at all (down, timeout, refused credentials), so asking again in the same
    run would only wait again; an invalid or too-long answer is not an outage."""

    def __init__(self, reason: str, outage: bool = True):
        super().__init__(reason)
        self.reason = reason
        self.outage = outage


def transcript(messages: list[dict[str, Any]]) -> str:
    lines = []
    for m in messages:
        content = m.get("content")
        if not isinstance(content, str):
            content = str(content or "")
        lines.append(f"{ROLE_LABELS.get(str(m.get('role')), str(m.get('role')).title())}: {content.strip()}")
    return "\n\n".join(lines)


def schema_for() -> dict[str, Any]:
    """No ``maxLength``: llama.cpp turns one into a grammar with a rule per character, and a bound of a
    few thousand characters makes its server fail ("failed to parse grammar") and drop the connection.
    The length is bounded by ``max_tokens`` and checked against the token target instead."""
    return {"type": "object", "properties": {"summary": {"type": "string", "minLength": 1}},
            "required": ["summary"], "additionalProperties": False}


def _checker(budget_tokens: int, replaced_tokens: int) -> Callable[[Any], list[str]]:
    def check(data: Any) -> list[str]:
        text = data["summary"].strip()
        tokens = estimate_tokens(text)
        if not text:
            return ["the summary is empty"]
        if tokens >= replaced_tokens:
            return [f"the summary ({tokens} tokens) is not shorter than what it replaces ({replaced_tokens})"]
        if tokens > budget_tokens * SLACK:
            return [f"the summary has about {tokens} tokens; the target is at most {budget_tokens}: shorten it"]
        return []
    return check


def _ask(client: Any, task: str, system: str, user: str, budget_tokens: int,
         replaced_tokens: int) -> tuple[str, dict[str, Any]]:
    msgs = [Message("system", system), Message("user", user)]
    try:
        result = client.structured(task, msgs, schema_for(), max_tokens=int(budget_tokens * SLACK) + 40,
                                   temperature=0.0, check=_checker(budget_tokens, replaced_tokens))
    except LLMBadResponse as exc:
        raise SummaryFailed(exc.message, outage=False) from None
    except LLMError as exc:
        raise SummaryFailed(exc.message) from None
    info = {"cached": result.cached, "prompt_tokens_estimate": estimate_tokens(system + user),
            "usage": dict(result.usage or {}), "model": result.model}
    return result.data["summary"].strip(), info


def summarise_history(client: Any, messages: list[dict[str, Any]], budget_tokens: int, *, level: int,
                      ratio: float | None, previous: str = "") -> tuple[str, dict[str, Any]]:
    """A summary of ``messages`` (and of an earlier summary) in at most ``budget_tokens``."""
    text = transcript(messages)
    replaced = estimate_tokens(text) + estimate_tokens(previous)
    target = f"at most {budget_tokens} tokens"
    if ratio is not None:
        target += f" (about {ratio:.0%} of its {replaced} tokens)"
    earlier = f"Summary of what came before (fold it in):\n{previous}\n\n" if previous else ""
    user = (f"Compression level: {LEVEL_WORDS.get(level, level)}. Summarise the conversation below in {target}."
            f"\n\n{earlier}Conversation:\n{text}\n\nAnswer with {{\"summary\": \"...\"}}.")
    return _ask(client, f"context_compress_{level}" if level else "context_summary", HISTORY_SYSTEM, user,
                budget_tokens, replaced)


def compress_skill(client: Any, name: str, content: str, budget_tokens: int) -> tuple[str, dict[str, Any]]:
    replaced = estimate_tokens(content)
    user = (f"Compression level: maximum. Compress the skill {name!r} below to at most {budget_tokens} tokens "
            f"(about {budget_tokens / max(1, replaced):.0%} of its {replaced} tokens).\n\nSkill:\n{content}\n\n"
            "Answer with {\"summary\": \"...\"}.")
    return _ask(client, "context_compress_skill", SKILL_SYSTEM, user, budget_tokens, replaced)
