"""The LLM skill matcher: one structured, cached call over the keyword matcher's best candidates.

The keyword matcher's wide pre-filter (:func:`kb_indexer.skills.match.candidate_pool`: the ``K`` best raw
scores, no threshold) picks the candidates; their name and description (never the whole catalog, never a
body) go with the message to the model in one :meth:`LLMClient.structured` call, whose answer is
``{"skills": [{"name", "reason"}, ...]}`` (may be empty: a message no skill serves). The prompt asks for
at most ``top`` items and only the first ``top`` are used; the schema's bound is not ``top`` but
``MAX_ANSWER_ITEMS`` (the LLM layer requires every array to be bounded), so a longer answer is cut, not
rejected. Names that are not candidates are dropped; when every name is invented the answer is not used.

The answer is cached by :mod:`kb_indexer.llm.cache`: its key hashes the prompt, which holds the
message with whitespace collapsed (NFC) and every candidate's name and description (the skill-set version that
matters: a changed description is a new key) and ``top``, with the backend, the model and the generation
settings.

Any failure (no answer in time, server down, invalid JSON or schema after the repair attempt, only invented
names) raises :class:`LLMMatchFailed`; the caller answers with the keyword result and says why.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Any

from kb_indexer.llm.base import LLMError, Message
from kb_indexer.llm.config import is_configured
from kb_indexer.llm.schema import schema_text
from kb_indexer.llm.structured import LLMClient
from kb_indexer.skills.match import candidate_pool
from kb_indexer.tokens import estimate_tokens

TASK = "skills_match"
MAX_DESCRIPTION_CHARS = 400   # a candidate's description in the prompt (the catalog's longest run to ~1,000)
MAX_REASON_CHARS = 300
MAX_ANSWER_ITEMS = 100        # the schema's array bound (as many as --candidates allows), not --top

SYSTEM_PROMPT = (
    "You decide which agent skills a user's chat message needs.\n"
    "A skill is needed only when the message asks for what the skill does (its description), not when it "
    "merely mentions a word of it. Most casual messages need no skill: then answer an empty list.\n"
    "Choose only among the numbered skills, by their exact name, best first, at most {top}; "
    "give a short reason for each."
)


class LLMMatchFailed(Exception):
    """The LLM gave no usable answer; ``reason`` says why (for ``fallback_reason``)."""

    def __init__(self, reason: str, prompt_tokens_estimate: int | None = None):
        super().__init__(reason)
        self.reason = reason
        self.prompt_tokens_estimate = prompt_tokens_estimate


@dataclass
class LLMPick:
    matched: list[dict[str, Any]]
    cached: bool
    dropped: list[str]            # names the model gave that were not candidates
    prompt_tokens_estimate: int
    model: str | None = None      # the model that answered (on a cache hit: the one of the cache key)


def collapse_space(message: str) -> str:
    """Whitespace collapsed, NFC: the message as the prompt (and so the cache key) holds it. Not the
    chat input normalisation (filler phrases, repeats), which is kb_indexer.context.normalise."""
    return " ".join(unicodedata.normalize("NFC", message).split())


def _describe(text: str) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= MAX_DESCRIPTION_CHARS else text[:MAX_DESCRIPTION_CHARS - 1] + "…"


def build_messages(message: str, candidates: list[dict[str, Any]], top: int) -> list[Message]:
    lines = "\n".join(f"{i + 1}. {c['name']}: {_describe(c['description'])}" for i, c in enumerate(candidates))
    user = (f"Message: {collapse_space(message)}\n\nSkills:\n{lines}\n\n"
            f"Answer with {{\"skills\": [{{\"name\": ..., \"reason\": ...}}]}}: the skills this message needs "
            f"(at most {top}, possibly none).")
    return [Message("system", SYSTEM_PROMPT.format(top=top)), Message("user", user)]


def schema_for() -> dict[str, Any]:
    item = {"type": "object", "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 200},
                                             "reason": {"type": "string", "maxLength": MAX_REASON_CHARS}},
            "required": ["name", "reason"], "additionalProperties": False}
    skills = {"type": "array", "items": item, "maxItems": MAX_ANSWER_ITEMS}
    return {"type": "object", "properties": {"skills": skills},
            "required": ["skills"], "additionalProperties": False}


def max_tokens_for(top: int) -> int:
    return 32 + 110 * top


def prompt_tokens(messages: list[Message], schema: dict[str, Any]) -> int:
    """The prompt's size estimate: every message plus the schema (quoted in the prompt by some backends)."""
    return estimate_tokens("".join(m.content for m in messages) + schema_text(schema))


def pick(client: Any, message: str, candidates: list[dict[str, Any]], top: int) -> LLMPick:
    """The candidates the model chose, best first, with its reasons; :class:`LLMMatchFailed` otherwise."""
    msgs, schema = build_messages(message, candidates, top), schema_for()
    estimate = prompt_tokens(msgs, schema)
    try:
        result = client.structured(TASK, msgs, schema, max_tokens=max_tokens_for(top), temperature=0.0)
    except LLMError as exc:
        raise LLMMatchFailed(exc.message, estimate) from None
    by_name = {c["name"]: c for c in candidates}
    matched, dropped, seen = [], [], set()
    for item in result.data["skills"][:top]:
        name = item["name"].strip()
        if name not in by_name:
            dropped.append(name)
            continue
        if name in seen:
            continue
        seen.add(name)
        c = by_name[name]
        matched.append({"name": name, "description": c["description"], "score": c["score"], "source": "llm",
                        "reason": item["reason"].strip()})
    if dropped and not matched:
        raise LLMMatchFailed("every skill the model named is not a candidate (invented: "
                             + ", ".join(dropped[:5]) + ")", estimate)
    return LLMPick(matched=matched, cached=result.cached, dropped=dropped, prompt_tokens_estimate=estimate,
                   model=result.model)


NO_BACKEND = "no LLM backend configured (--llm-backend or KBINDEX_LLM_BACKEND): keyword result"


def llm_step(conn: Any, index: Any, message: str, opts: Any, out: dict[str, Any], llm: Any = None,
             client: Any = None) -> None:
    """Replace the keyword result ``out`` by the LLM's choice among the candidates, or say why not.

    ``llm`` are :class:`kb_indexer.llm.config.LLMOptions`; ``client`` an :class:`LLMClient` (tests).
    Bad settings (an unknown backend) raise ``UsageError``; every LLM failure leaves the keyword result
    with ``fallback_reason``. Whenever the model was asked (or its cached answer looked up), ``candidates``
    is what was sent: the pool, not the keyword result's candidates.
    """
    if client is None and not is_configured(llm):
        out["fallback_reason"] = NO_BACKEND
        return
    pool = candidate_pool(index, message, opts.candidates, opts)
    if not pool:   # no skill shares a word with the message: nothing to ask
        out["llm"] = {"called": False, "reason": "no candidate shares a word with the message"}
        return
    own = client is None
    client = client if client is not None else LLMClient.from_options(llm, conn)
    try:
        chosen = pick(client, message, pool, opts.top)
    except LLMMatchFailed as exc:   # the model named after the call: the server may have said which it is
        who = f"LLM {client.config.backend} ({client.model or 'default model'})"
        out["fallback_reason"] = f"{who} not used: {exc.reason}; keyword result"
        out["prompt_tokens_estimate"] = exc.prompt_tokens_estimate
        out["candidates"] = pool   # what was sent
        out["llm"] = {"called": True, "backend": client.config.backend, "model": client.model}
        return
    finally:
        if own:
            client.close()
    out.update(matched=chosen.matched, method="llm", candidates=pool, cache={"hit": chosen.cached},
               prompt_tokens_estimate=chosen.prompt_tokens_estimate)
    out["llm"] = {"called": not chosen.cached, "backend": client.config.backend,
                  "model": chosen.model or client.model, "dropped": chosen.dropped}
