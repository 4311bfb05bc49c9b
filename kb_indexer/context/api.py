"""The context sub-API: ``kb.context`` of :class:`kb_indexer.api.KnowledgeBase` (built on first use).

    with KnowledgeBase.open() as kb:
        kb.context.add("s1", role="user", text="how about workspace workspace 5")
        kb.context.build("s1", "open it")["prompt"]
        kb.context.compress({"messages": [...], "skills": [...]}, window=8192)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from kb_indexer.config import DbTarget
from kb_indexer.context.assemble import BuildOptions, build
from kb_indexer.context.compress import CompressOptions, compress, total_tokens
from kb_indexer.context.normalise import normalise
from kb_indexer.context.store import (add_messages, list_sessions, load_messages, require_session, reset_session,
                                      show_session)
from kb_indexer.context.window import resolve_window
from kb_indexer.errors import NotFoundError, UsageError, ValidationError
from kb_indexer.limits import check_int_arg, check_session_id, check_utf8
from kb_indexer.llm.config import LLMOptions, is_configured, resolve, unknown_backend
from kb_indexer.llm.structured import LLMClient
from kb_indexer.skills.session import load_skills
from kb_indexer.store.errors import translating
from kb_indexer.store.dbapi import Connection

if TYPE_CHECKING:
    from kb_indexer.results import (ContextAddResult, ContextBuildResult, ContextCompressResult, ContextResetResult,
                                    ContextSessionsResult, ContextShowResult)

MAX_MESSAGE_CHARS = 1_000_000
MAX_MESSAGES = 100_000
ROLES_IN = ("system", "user", "assistant", "tool")
PRIORITIES = ("active", "relevant")
NO_BACKEND = "no LLM backend configured (--llm-backend or KBINDEX_LLM_BACKEND): extractive summary"


def _text(value: Any, what: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be text, got {type(value).__name__}")
    check_utf8(value, what)
    if len(value) > limit:
        raise ValidationError(f"{what} is longer than {limit:,} characters")
    return value



def check_messages(items: Any, roles: tuple[str, ...], what: str = "messages") -> list[dict[str, Any]]:
    """A JSON message list: objects with a known ``role`` and text ``content`` (an assistant message
    with ``tool_calls`` may have none). Refused whole, before anything is written."""
    if not isinstance(items, list):
        raise ValidationError(f"{what} must be a JSON list of {{\"role\", \"content\"}} objects")
    if len(items) > MAX_MESSAGES:
        raise ValidationError(f"{what}: more than {MAX_MESSAGES:,} messages")
    out = []
    for i, m in enumerate(items):
        if not isinstance(m, dict):
            raise ValidationError(f"{what}[{i}] must be an object with role and content")
        if m.get("role") not in roles:
            raise ValidationError(f"{what}[{i}].role must be one of {', '.join(roles)}, got {m.get('role')!r}")
        content = m.get("content")
        if content is None and m.get("role") == "assistant" and m.get("tool_calls"):
            out.append(dict(m))
            continue
        _text(content, f"{what}[{i}].content")
        if "is_question" in m and not isinstance(m["is_question"], bool):
            raise ValidationError(f"{what}[{i}].is_question must be true or false")
        out.append(dict(m))
    return out


def check_skills(items: Any) -> list[dict[str, Any]]:
    if items is None:
        return []
    if not isinstance(items, list):
        raise ValidationError("skills must be a JSON list of {\"name\", \"content\", \"priority\"} objects")
    out = []
    for i, s in enumerate(items):
        if not isinstance(s, dict):
            raise ValidationError(f"skills[{i}] must be an object with name, content and priority")
        _text(s.get("name"), f"skills[{i}].name", 200)
        _text(s.get("content", ""), f"skills[{i}].content")
        priority = s.get("priority", "active")
        if priority not in PRIORITIES:
            raise ValidationError(f"skills[{i}].priority must be active or relevant, got {priority!r}")
        out.append({**s, "content": s.get("content", ""), "priority": priority})
    return out


def _chat_model(llm: LLMOptions | None, client: LLMClient | None) -> tuple[str | None, str | None]:
    """(backend, model) of the configured LLM settings, whether or not this call uses the LLM: the
    window belongs to the model the context is for (``--no-llm`` does not change it)."""
    if client is not None:
        return client.config.backend, client.model
    config = resolve(llm)
    return config.backend, config.model


@translating  # a locked, read-only, full or damaged index raises busy, read_only, disk_full, bad_database
class ContextAPI:
    """Chat-context sessions: add, build, show, reset, sessions, compress; and the rules a chat front end
    applies itself: normalise, tokens, window."""

    def __init__(self, conn: Connection, db_path: DbTarget | None = None) -> None:
        self.conn = conn
        self.db_path = db_path

    def _context_client(self, use_llm: bool, llm: LLMOptions | None,
                        client: LLMClient | None) -> tuple[LLMClient | None, str | None]:
        """(an LLMClient or None, why none)."""
        if not use_llm:
            return None, "--no-llm: extractive summary"
        if client is not None:
            return client, None
        if not is_configured(llm):
            return None, unknown_backend(llm) or NO_BACKEND
        return LLMClient.from_options(llm, self.conn), None

    def add(self, session: str, messages: list[dict[str, Any]] | None = None, *, role: str | None = None,
            text: str | None = None, is_question: bool = False) -> ContextAddResult:
        """Append one message (``role`` and ``text``) or a list, in one transaction."""
        sid = check_session_id(session)
        if messages is None:
            if role not in ("user", "assistant"):
                raise UsageError(f"role (--role) must be user or assistant, got {role!r}")
            if is_question and role != "assistant":
                raise UsageError("is_question (--question) flags an assistant message (the design tracks the assistant's "
                                 "questions); a user message is never one")
            messages = [{"role": role, "content": text, "is_question": bool(is_question)}]
        items = check_messages(messages, ("user", "assistant"))
        if not items:
            raise ValidationError("no messages to add")
        for i, m in enumerate(items):
            if not str(m.get("content") or "").strip():
                raise ValidationError(f"message {i + 1} has no text (an empty message is not recorded)")
        return cast("ContextAddResult", add_messages(self.conn, sid, items))

    def build(self, session: str, message: str, *, recent: int = 8, max_chars: int = 6000,
              summary_after: int = 12, use_llm: bool = True, llm: LLMOptions | None = None,
              client: LLMClient | None = None, record: bool = False) -> ContextBuildResult:
        """The chat context for ``message`` (see :mod:`kb_indexer.context.assemble`); with ``record``, the
        message is then added to the session as the user's."""
        sid = check_session_id(session)
        _text(message, "the message")
        opts = BuildOptions(recent=check_int_arg(recent, "recent (--recent)", 0, 100),
                            max_chars=check_int_arg(max_chars, "max_chars (--max-chars)", 200, 10_000_000),
                            summary_after=check_int_arg(summary_after, "summary_after (--summary-after)", 1, 100_000))
        opts.client, opts.no_llm_reason = self._context_client(use_llm, llm, client)
        try:
            out = build(self.conn, sid, message, opts)
        finally:
            if opts.client is not None and client is None:
                opts.client.close()
        out["recorded"] = None
        if record and out["stats"]["current_recorded"]:   # record-then-build already stored it
            out["recorded"] = {"seq": None, "already": True}
        elif record:
            out["recorded"] = add_messages(self.conn, sid, [{"role": "user", "content": message}])["added"][0]
        return cast("ContextBuildResult", out)

    def show(self, session: str) -> ContextShowResult:
        return cast("ContextShowResult", show_session(self.conn, check_session_id(session)))

    def reset(self, session: str) -> ContextResetResult:
        return cast("ContextResetResult", reset_session(self.conn, check_session_id(session)))

    def sessions(self) -> ContextSessionsResult:
        return cast("ContextSessionsResult", list_sessions(self.conn))

    def compress(self, payload: dict[str, Any] | None = None, *, session: str | None = None,
                 window: int | None = None, keep_last: int = 4, use_llm: bool = True, llm: LLMOptions | None = None,
                 client: LLMClient | None = None) -> ContextCompressResult:
        """``{messages, skills, stats}``: the input compressed to fit ``window`` (see
        :mod:`kb_indexer.context.compress`). With ``session``, the messages are the session's (after the
        payload's system messages) and the skills, unless given, the skill session's loaded skills."""
        payload = {} if payload is None else payload
        if not isinstance(payload, dict):
            raise ValidationError("the input must be a JSON object {\"messages\": [...], \"skills\": [...]}")
        messages = check_messages(payload.get("messages", [] if session else None), ROLES_IN)
        skills = check_skills(payload.get("skills"))
        if session is not None:
            if any(m["role"] != "system" for m in messages):
                raise UsageError("with session (--session) the messages are the session's: the input may add system "
                                 "messages and skills only")
            messages, skills = self._session_input(check_session_id(session), messages, skills, "skills" in payload)
        if not messages:
            raise ValidationError("no messages to compress")
        opts = CompressOptions(window=0, keep_last=check_int_arg(keep_last, "keep_last (--keep-last)", 0, 1000))
        opts.window, source = resolve_window(window, *_chat_model(llm, client))
        opts.client, opts.no_llm_reason = self._context_client(use_llm, llm, client)
        try:
            out = compress(messages, skills, opts)
        finally:
            if opts.client is not None and client is None:
                opts.client.close()
        out["stats"]["window_source"] = source
        if session is not None:   # the stored question flag is kbindex's, not a chat API field: plain messages
            out["messages"] = [{k: v for k, v in m.items() if k != "is_question"} for m in out["messages"]]
        out["llm"] = (opts.client.report(used=out["stats"]["llm_calls"] + out["stats"]["cache_hits"] > 0,
                                         fallback="extractive" if out["stats"]["fallback"] else None,
                                         error=out["stats"]["fallback"])
                      if opts.client is not None else None)
        return cast("ContextCompressResult", out)

    @staticmethod
    def normalise(text: str) -> str:
        """A chat message as the context stores and matches it (see :mod:`kb_indexer.context.normalise`)."""
        return normalise(text)

    @staticmethod
    def tokens(messages: list[dict[str, Any]], skills: list[dict[str, Any]] | None = None) -> int:
        """Estimated tokens of chat messages (and skills), as :meth:`compress` counts them."""
        return total_tokens(messages, skills or [])

    @staticmethod
    def window(window: int | None, backend: str | None = None, model: str | None = None) -> tuple[int, str]:
        """(the context window in tokens, where it came from): ``window``, ``KBINDEX_CONTEXT_WINDOW``, the
        model's known window, or the default (see :mod:`kb_indexer.context.window`)."""
        return resolve_window(window, backend, model)

    def _session_input(self, sid: str, given: list[dict[str, Any]], skills: list[dict[str, Any]],
                       skills_given: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        require_session(self.conn, sid)
        stored = [{"role": m["role"], "content": m["content"], "is_question": m["is_question"]}
                  for m in load_messages(self.conn, sid)]
        messages = [m for m in given if m["role"] == "system"] + stored
        if not skills_given:
            skills = self._loaded_skills(sid)
        return messages, skills

    def _loaded_skills(self, sid: str) -> list[dict[str, Any]]:
        """The skill session ``sid``'s loaded skills, most important first (none if there is none)."""
        try:
            loaded = load_skills(self.conn, sid)
        except NotFoundError:
            return []
        return [{"name": s["name"], "content": s["markdown"], "priority": s["priority"]} for s in loaded["skills"]]
