"""What a chat turn sends the model: the system message (instructions, loaded skills, retrieved and
attached documents, the rolling summary), the recent turns verbatim and the message; compressed with the
loaded skills when they reach 80/90/95% of the window (:mod:`kb_indexer.context.compress`: history first,
then relevant skills dropped, then active skills compressed).

The rolling summary of older turns is the LLM's when one is configured (extractive when it fails or none
is: ``summary`` event with ``fallback``), refreshed by :meth:`kb_indexer.context.api.ContextAPI.build`.
"""

from __future__ import annotations

from typing import Any

from kb_indexer.errors import NotFoundError

ChatEngine = Any     # kb_indexer.chat.engine.ChatEngine (which imports this module)

SKILLS_SHARE = 0.25          # at most this share of the window for loaded skills' bodies
NO_REFRESH = 100_000         # summary_after for a look at the context that must not refresh the summary
SKILLS_HEADING = "# Skills loaded for this conversation"
SUMMARY_HEADING = "# Summary of the earlier conversation"


def loaded_skills(engine: ChatEngine) -> list[dict[str, Any]]:
    """The session's loaded skills as compression input ({name, content, priority}), most important first,
    within a quarter of the window."""
    try:
        loaded = engine.kb.skills.load(engine.session_id, budget=max(1, int(engine.window * SKILLS_SHARE)))
    except NotFoundError:          # no turn yet: no skill session
        return []
    return [{"name": s["name"], "priority": s["priority"],
             "content": "\n\n".join(p for p in (s["description"].strip(), (s["body"] or "").strip()) if p)}
            for s in loaded["skills"]]


def skills_markdown(skills: list[dict[str, Any]]) -> str:
    if not skills:
        return ""
    return SKILLS_HEADING + "\n\n" + "\n\n".join(f"## Skill: {s['name']}\n\n{s['content']}" for s in skills)


def system_text(head: str, skills: list[dict[str, Any]], rest: list[str]) -> str:
    return "\n\n".join(p for p in (head, skills_markdown(skills), *rest) if p)


def conversation(engine: ChatEngine, norm: str, *, refresh: bool = True) -> tuple[str | None, list[dict[str, Any]],
                                                                                   dict[str, Any]]:
    """(the rolling summary, the turns it does not cover verbatim, what the refresh did). With ``refresh``
    the summary folds in the turns that aged out, by the LLM when the chat has one (else extractive)."""
    kb, sid = engine.kb, engine.session_id
    if refresh:
        use_llm = bool(engine.client.config.enabled)
        built = kb.context.build(sid, norm, use_llm=use_llm, client=engine.client if use_llm else None)
    else:
        built = kb.context.build(sid, norm, use_llm=False, summary_after=NO_REFRESH)
    summary = built["summary"]
    through = (summary["covers_through"] or 0) if summary else 0
    recent: list[dict[str, Any]] = []
    if built["stats"]["session_messages"]:
        recent = [{"role": m["role"], "content": m["content"]}
                  for m in kb.context.show(sid)["messages"] if m["seq"] > through]
    return (summary["text"] if summary else None), recent, built["stats"]["summary_refresh"]


def summary_event(refresh: dict[str, Any]) -> dict[str, Any] | None:
    """The ``summary`` event of a turn whose rolling summary was refreshed: its source and any fallback."""
    if not refresh.get("refreshed"):
        return None
    return {"source": refresh.get("source"), "folded_messages": refresh.get("folded_messages"),
            "fallback": refresh.get("fallback")}


def build(engine: ChatEngine, head: str, rest: list[str], recent: list[dict[str, Any]],
          norm: str) -> tuple[list[dict[str, Any]], dict[str, Any] | None, str | None]:
    """(the messages to send, the compression event or None, a note or None): system + recent turns + the
    message, with the loaded skills; compressed together when over 80% of the prompt's room."""
    skills = loaded_skills(engine)
    messages = [{"role": "system", "content": system_text(head, [], rest)}, *recent, {"role": "user", "content": norm}]
    room = engine.prompt_room()
    out = engine.kb.context.compress({"messages": messages, "skills": skills}, window=room, client=engine.client)
    stats = out["stats"]
    engine.context_tokens = stats["tokens_after"]
    event: dict[str, Any] | None = None
    note: str | None = None
    if stats["level"] and stats["tokens_after"] < stats["tokens_before"]:
        event = {k: stats[k] for k in ("level", "tokens_before", "tokens_after", "stages", "fallback")}
        event["dropped_skills"] = list(stats.get("dropped_skills") or [])
    if stats["over_window"]:
        note = (f"the context is still {stats['tokens_after']:,} tokens for the {room:,} the model's window "
                f"leaves the prompt (window {engine.window:,}, minus room for the answer): the server may refuse "
                "it; raise --window or send less")
    elif stats["cut_messages"] or stats["cut_skills"]:
        note = (f"the context was {stats['tokens_before']:,} tokens for the {room:,} the model's window leaves "
                f"the prompt (window {engine.window:,}, minus room for the answer): {_cut(out)} cut to fit "
                "(start and end kept); raise --window to send it whole")
    if stats["level"]:
        messages, skills = out["messages"], out["skills"]
    messages = [dict(m) for m in messages]
    system = next(i for i, m in enumerate(messages) if m["role"] == "system")
    body = messages[system]["content"]     # head and rest as compressed: cut to fit when they alone overflow
    if body.startswith(head):
        messages[system]["content"] = system_text(head, skills, [body[len(head):].removeprefix("\n\n")])
    else:
        messages[system]["content"] = system_text(body, skills, [])
    return messages, event, note


def _cut(out: dict[str, Any]) -> str:
    """What the compression cut to fit the window, in words: "your message and 2 skills"."""
    messages, stats = out["messages"], out["stats"]
    parts = []
    if any(messages[i]["role"] == "system" for i in stats["cut_messages"]):
        parts.append("the system message (instructions, documents)")
    turns = [i for i in stats["cut_messages"] if messages[i]["role"] != "system" and i != len(messages) - 1]
    if turns:
        parts.append(f"{len(turns)} earlier message{'s' if len(turns) > 1 else ''}")
    if len(messages) - 1 in stats["cut_messages"]:
        parts.append("your message")
    if stats["cut_skills"]:
        n = len(stats["cut_skills"])
        parts.append(f"{n} skill{'s' if n > 1 else ''}")
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else "".join(parts)


def estimate(engine: ChatEngine, head: str) -> int:
    """Tokens the next turn sends before its message and retrieval: system, skills, summary, recent turns."""
    summary, recent, _ = conversation(engine, "(next message)", refresh=False)
    rest = [SUMMARY_HEADING + "\n\n" + summary] if summary else []
    return int(engine.kb.context.tokens([{"role": "system", "content": system_text(head, [], rest)}, *recent],
                                        loaded_skills(engine)))
