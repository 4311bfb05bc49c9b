"""The chat engine: one user turn in, events out. Front ends (the terminal, piped scripts, tests, an agent)
only render the events; everything a turn does happens here.

A turn, in order:

1. ``input``: the message normalised (:mod:`kb_indexer.context.normalise`), the original kept;
2. ``note`` in free mode when the message asks to search a knowledge base: there is none to search;
3. ``skills``: one turn of the skill session with the same id (loaded, newly loaded, evicted). With an LLM
   the model chooses among the keyword matcher's candidates (``method: llm``); when it fails the keyword
   result stays (``method: keyword`` and ``fallback``, the reason);
4. ``attachments``: the ``@path`` mentions of knowledge-base documents (:mod:`kb_indexer.chat.mentions`),
   attached or refused (outside the KB root, not indexed) with the reason;
5. ``retrieval`` in knowledge-base mode: ``query`` on the normalised message (a short follow-up together
   with the previous user message; recorded like any query, so ``feedback`` can follow), its results
   injected into the system message in the markdown context format;
6. ``summary`` when the rolling summary of older turns was refreshed: the LLM's, else extractive (with
   ``fallback``, the reason);
7. the messages (:mod:`kb_indexer.chat.prompt`): the system message (instructions, loaded skills, attached
   and retrieved documents, the rolling summary), the recent turns verbatim, the normalised message;
   ``compression`` of the messages and the loaded skills together when they reach 80/90/95% of the room
   the model's window leaves the prompt (:mod:`kb_indexer.context.compress`);
8. the answer, streamed as ``text`` events; in knowledge-base mode the model may call the tools of
   :mod:`kb_indexer.chat.tools` (``tool_call`` / ``tool_result``), at most ``MAX_TOOL_ROUNDS`` rounds;
9. ``done``: the user's message and the answer are saved to the session (so a crash loses at most the
   turn in flight), with the answer's citations (retrieved or attached paths it names) and ``usage``, the
   turn's token use (:mod:`kb_indexer.chat.usage`).

An LLM failure is an ``error`` event (the turn is not saved; the session goes on). A turn cancelled by a
front end (Ctrl-C: ``KeyboardInterrupt`` raised inside the generator while it waits on the LLM, or the
generator closed) is saved with what was written of the answer, ending with ``CANCELLED_MARK``.
"""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generator, Iterator

from kb_indexer import settings
from kb_indexer.api import KnowledgeBase, QueryOptions, render_query
from kb_indexer.chat import export, mentions, prompt, usage
from kb_indexer.chat.source import Source, open_source
from kb_indexer.chat.tools import MAX_TOOL_ROUNDS, TOOLS, describe_call, run_tool
from kb_indexer.errors import KbError, NotFoundError, UsageError
from kb_indexer.llm.base import LLMError, LLMModelNotFound, LLMUnavailable, Message, Tool, ToolCall

if TYPE_CHECKING:
    from kb_indexer.results import FeedbackResult, SkillsSyncResult, StoredMessage

RETRIEVE = 5
CHAT_TIMEOUT = 300.0         # seconds one answer may take, unless --llm-timeout / KBINDEX_LLM_TIMEOUT say
MAX_MATCH_CHARS = 20_000     # skills are matched on the start of a longer message
RETRIEVAL_CHARS = 2_000      # and retrieval searches the start of it
# A follow-up ("and the networks?", "why?", "what about DQN") is searched with the previous user message.
_FOLLOW_UP = re.compile(r"^\W*(and|or|but|also|then|so|what about|how about|it|its|it's|that|this|these|those|"
                        r"they|them|why|how come|more|same|which one)\b", re.IGNORECASE)
CANCELLED_MARK = "[answer cancelled by the user]"
PREVIEW_CHARS = 60           # of a session's first message in the session list
SYSTEM_KB = ("You are kbindex chat, an assistant over the knowledge base {name!r}. Answer from the retrieved "
             "documents below when they are relevant and cite their paths in square brackets, e.g. "
             "[notes/setup.md]; if they do not answer the question, say so. You may call the tools to search "
             "or read documents. Be concise.")
SYSTEM_FREE = ("You are kbindex chat in free mode: no knowledge base is selected, so you cannot search one. If "
               "the user asks you to search a knowledge base, their notes or documents, tell them to restart with "
               "`kbindex chat --db PATH`. Be concise.")
FREE_KB_NOTE = ("No knowledge base is selected (free mode), so none can be searched: restart with "
                "`kbindex chat --db PATH`, or run `kbindex init && kbindex sync` in the folder of your notes.")
_KB_REQUEST = re.compile(r"\b(search|look up|look through|find|query|check)\b.{0,40}\b(my|our|the) (knowledge ?base|"
                         r"notes|docs|documentation|documents|wiki|kb|index)\b|\b(in|from) (my|our) (knowledge ?base|"
                         r"notes|docs|wiki)\b|\b(my|our) (knowledge ?base|notes|docs|wiki) (says?|mentions?|has|have|contains?)\b",
                         re.IGNORECASE)


@dataclass
class Event:
    kind: str
    data: dict[str, Any] = field(default_factory=dict)


def _default_timeout(llm: Any) -> bool:
    return getattr(llm, "timeout", None) is None and not settings.text("KBINDEX_LLM_TIMEOUT")


def _pct(tokens: int, window: int) -> float | None:
    share = usage.context_share(tokens, window)
    return None if share is None else round(share, 1)


def new_session_id() -> str:
    return f"chat-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


class ChatEngine:
    def __init__(self, kb: KnowledgeBase, source: Source, note: str | None, llm: Any = None, *,
                 stream: bool = True, window: int | None = None, client: Any = None):
        self.kb, self.source, self.note, self.stream = kb, source, note, stream
        self.client = client if client is not None else kb.llm_client(llm)
        if client is None and _default_timeout(llm):
            # a streamed answer from a local CPU model takes minutes
            self.client.config = replace(self.client.config, timeout=CHAT_TIMEOUT)
        self.window, self.window_source = kb.context.window(window, self.client.config.backend, self.client.model)
        self.session_id = new_session_id()
        self.last_query_id: int | None = None
        self.last_paths: list[str] = []
        # The context the model gets: the last prompt as sent (prompt.build), or, before a turn (a new, resumed,
        # cleared or compacted session), the estimate of the next one before its message and retrieval.
        self.context_tokens = 0
        self.tools_ok = True
        self._partial: list[str] = []        # the answer of the turn in flight, as streamed
        self._usage: dict[str, Any] = {}     # what the backend reported of its token use this turn

    @classmethod
    def open(cls, db: Any = None, *, free: bool = False, resume: str | None = None, llm: Any = None,
             stream: bool = True, window: int | None = None, client: Any = None) -> "ChatEngine":
        kb, source, note = open_source(db, free)
        try:
            engine = cls(kb, source, note, llm, stream=stream, window=window, client=client)
            if resume:
                engine.resume(resume)
            engine.sync_skills()
        except BaseException:
            kb.close()
            raise
        return engine

    def sync_skills(self) -> SkillsSyncResult | None:
        """Bring the skills up to date at start (the remembered directories and ``KBINDEX_SKILLS``; only
        changed files are read). A failure leaves the indexed skills as they are."""
        try:
            return self.kb.skills.sync()
        except KbError:
            return None

    # -- identity ----------------------------------------------------------------------------------------
    @property
    def prompt(self) -> str:
        return self.source.prompt

    @property
    def model_label(self) -> str:
        model = self.client.model or "server default"
        return f"{self.client.config.backend}/{model.rsplit('/', 1)[-1]}"   # a model file's path: its name

    def check_llm(self, timeout: float = 5.0) -> None:
        """Raise a clear error when the LLM cannot answer (backend none, server down, model missing)."""
        config = self.client.config
        fix = ("or choose another with --llm-backend/--llm-model (a local model in one command: `kbindex model "
               "serve`, then --llm-backend openai); `kbindex doctor` checks the set-up")
        start = {"ollama": "start it (`ollama serve`; OLLAMA_HOST names another host)",
                 "openai": "start the server or point KBINDEX_OPENAI_BASE_URL at it",
                 "gemini": "check GEMINI_API_KEY and the network"}.get(config.backend, "start it")
        if not config.enabled:
            raise UsageError("chat needs an LLM, and the backend is 'none': choose one with --llm-backend "
                             "(or KBINDEX_LLM_BACKEND); `kbindex doctor` checks the set-up")
        try:
            probe = self.client.backend.probe(timeout)
        except LLMError as exc:
            raise LLMUnavailable(f"LLM {config.backend} at {config.base_url or 'its default URL'} cannot be used: "
                                 f"{exc.message}; {start}, {fix}") from None
        if not probe.reachable or probe.error:
            raise LLMUnavailable(f"LLM {config.backend} at {probe.url or config.base_url} is not reachable"
                                 f"{': ' + probe.error if probe.error else ''}; {start}, {fix}")
        if probe.model_available is False:
            get = (f"pull it (`ollama pull {self.client.model}`)" if config.backend == "ollama"
                   else "pass --llm-model with one it has")
            raise LLMModelNotFound(f"model {self.client.model!r} is not on the {config.backend} server at {probe.url}"
                                   f" (it has: {', '.join(probe.models[:8]) or 'none'}); {get}, {fix}")

    # -- a turn --------------------------------------------------------------------------------------------
    def turn(self, text: str) -> Iterator[Event]:
        if not text.strip():
            return
        norm = self.kb.context.normalise(text)
        yield Event("input", {"original": text, "normalised": norm})
        if self.source.mode == "free" and _KB_REQUEST.search(norm):
            yield Event("note", {"message": FREE_KB_NOTE})
        skills = self._match_skills(norm)
        if skills is not None:
            yield Event("skills", skills)
        attached, refused = mentions.attach(self.kb, self.source.mode, text)
        if (attachment := mentions.event(attached, refused)) is not None:
            yield Event("attachments", attachment)
        retrieved = self._retrieve(norm)
        if retrieved is not None:
            yield Event("retrieval", retrieved["event"])
        self.last_paths += [d["path"] for d in attached]
        before, self._partial, self._usage = self.context_tokens, [], {}
        summary, recent, refresh = prompt.conversation(self, norm)
        if (refreshed := prompt.summary_event(refresh)) is not None:
            yield Event("summary", refreshed)
        rest = [mentions.attachments_markdown(attached), retrieved["markdown"] if retrieved else "",
                prompt.SUMMARY_HEADING + "\n\n" + summary if summary else ""]
        messages, compression, note = prompt.build(self, self._head(), rest, recent, norm)
        try:
            if compression is not None:
                yield Event("compression", compression)
            if note:
                yield Event("note", {"message": note})
            answer = yield from self._answer(messages)
        except (GeneratorExit, KeyboardInterrupt):    # cancelled: the partial answer is kept, marked
            self.context_tokens = before
            self._save_cancelled(text)
            raise
        if answer is None:
            self.context_tokens = before
            return
        self.kb.context.add(self.session_id, [{"role": "user", "content": text},
                                              {"role": "assistant", "content": answer or "(no answer)"}])
        cited = [p for p in dict.fromkeys(self.last_paths) if p in answer]
        yield Event("done", {"answer": answer, "citations": cited, "session": self.session_id,
                             "context_tokens": self.context_tokens, "window": self.window,
                             "usage": usage.turn_usage(self._usage, self.context_tokens, answer)})

    def _match_skills(self, norm: str) -> dict[str, Any] | None:
        """One turn of the skill session: the LLM chooses among the keyword candidates when the chat has an
        LLM (the keyword result when it fails, with the reason); the event, or None when nothing changed."""
        use_llm = bool(self.client.config.enabled)
        out = self.kb.skills.match(norm[:MAX_MATCH_CHARS], session=self.session_id, use_llm=use_llm,
                                   client=self.client if use_llm else None)
        session = out["session"]
        fallback = out.get("fallback_reason") if use_llm else None
        if session is None or not (session["newly_loaded"] or session["evicted"] or fallback):
            return None
        event: dict[str, Any] = {k: session[k] for k in ("loaded", "newly_loaded", "evicted")}
        event.update(method=out.get("method", "keyword"), fallback=fallback)
        return event

    def _save_cancelled(self, text: str) -> None:
        """Keep a cancelled turn: the message and what was written of the answer, marked cancelled."""
        partial = "".join(self._partial).rstrip()
        answer = (partial + "\n\n" if partial else "") + CANCELLED_MARK
        try:
            self.kb.context.add(self.session_id, [{"role": "user", "content": text},
                                                  {"role": "assistant", "content": answer}])
        except KbError:      # the index is locked or read-only: the cancel itself must not fail
            pass

    def _retrieve(self, norm: str) -> dict[str, Any] | None:
        if self.source.mode != "kb":
            return None
        question = self._retrieval_question(norm)
        if not question.strip():        # nothing to search (an empty query is bad usage)
            return None
        out = self.kb.query(question, options=QueryOptions(limit=RETRIEVE))
        self.last_query_id = out.get("query_id")
        self.last_paths = [r["filepath"] for r in out["results"]]
        if not out["results"]:
            return None
        results = [{"path": r["filepath"], "title": r["title"], "score": r["relevance_score"]} for r in out["results"]]
        return {"markdown": render_query(out), "event": {"query_id": self.last_query_id, "results": results,
                                                          "total": out.get("total", len(results))}}

    def _retrieval_question(self, norm: str) -> str:
        """A follow-up ("and the networks?", "why?") is searched together with the previous user message;
        any other message on its own ("what is q learning")."""
        norm = norm[:RETRIEVAL_CHARS]
        if not _FOLLOW_UP.match(norm):
            return norm
        previous = [m for m in self.history() if m["role"] == "user"]
        if not previous:
            return norm
        before = (previous[-1]["normalised"] or previous[-1]["content"])[:RETRIEVAL_CHARS]   # the start of it too
        return f"{before} {norm}"

    def _head(self) -> str:
        return SYSTEM_KB.format(name=self.source.name) if self.source.mode == "kb" else SYSTEM_FREE

    def estimate_next(self) -> int:
        """Tokens the next turn sends before its message and retrieval: system, skills, summary, recent turns."""
        return prompt.estimate(self, self._head())

    def prompt_room(self) -> int:
        """Tokens the prompt may use: the window minus room for the answer (the answer cap, at most a
        quarter of the window): servers that count both refuse a prompt that leaves none."""
        return max(256, self.window - min(self.client.config.max_tokens_cap, self.window // 4))

    def _answer(self, messages: list[dict[str, Any]]) -> Generator[Event, None, str | None]:
        """Stream the model's answer, running its tool calls; the answer, or None after an error event."""
        msgs = [Message(m["role"], m.get("content") or "") for m in messages]
        answer = ""
        for round_ in range(MAX_TOOL_ROUNDS + 1):
            tools = TOOLS if self.source.mode == "kb" and self.tools_ok and round_ < MAX_TOOL_ROUNDS else None
            try:
                text, calls = yield from self._ask(msgs, tools)
            except LLMError as exc:
                if tools and not answer and self._tools_refused(exc):
                    self.tools_ok = False
                    continue
                yield Event("error", {"message": exc.message, "code": exc.code})
                return None
            answer += ("\n\n" if answer and text else "") + text
            if not calls or tools is None:   # a call to a tool that was not offered is never run
                return answer
            msgs.append(Message("assistant", text, tool_calls=calls))
            for call in calls:
                yield Event("tool_call", {"name": call.name, "arguments": call.arguments,
                                          "label": describe_call(call.name, call.arguments)})
                result, info = run_tool(self.kb, call.name, call.arguments)
                self._remember(info)
                yield Event("tool_result", {"name": call.name, "ok": info["ok"], "summary": info["summary"]})
                msgs.append(Message("tool", result, tool_call_id=call.id, name=call.name))
        return answer

    @staticmethod
    def _tools_refused(exc: LLMError) -> bool:
        """A model or server without tool calling (e.g. Ollama's "does not support tools")."""
        return exc.status in (400, 404, 422) and "tool" in exc.message.lower()

    def _remember(self, info: dict[str, Any]) -> None:
        if info.get("query_id"):
            self.last_query_id = info["query_id"]
        self.last_paths += info.get("paths") or []

    def _ask(self, msgs: list[Message],
             tools: list[Tool] | None) -> Generator[Event, None, tuple[str, list[ToolCall]]]:
        """One model call: (text, tool calls), streaming text events."""
        if not self.stream:
            completion = self.client.chat(msgs, tools=tools, max_tokens=self.client.config.max_tokens_cap)
            usage.add(self._usage, completion.usage)
            self._partial.append(completion.text or "")
            if completion.text:
                yield Event("text", {"text": completion.text})
            return completion.text or "", list(completion.tool_calls)
        text: list[str] = []
        calls: list[ToolCall] = []
        for chunk in self.client.stream_chat(msgs, tools=tools, max_tokens=self.client.config.max_tokens_cap):
            if chunk.text:
                text.append(chunk.text)
                self._partial.append(chunk.text)
                yield Event("text", {"text": chunk.text})
            calls += chunk.tool_calls
            usage.add(self._usage, chunk.usage)
        return "".join(text), calls

    # -- slash commands' data ------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        loaded = self._loaded_skills()
        return {"model": self.model_label, "window": self.window, "context_tokens": self.context_tokens,
                "context_pct": _pct(self.context_tokens, self.window), "loaded_skills": loaded,
                "session": self.session_id, "source": self.source.to_dict()}

    def _loaded_skills(self) -> list[str]:
        try:
            return self.kb.skills.session(self.session_id)["loaded"]
        except NotFoundError:
            return []

    def context_preview(self) -> dict[str, Any]:
        built = self.kb.context.build(self.session_id, "(next message)", use_llm=False,
                                      summary_after=prompt.NO_REFRESH)
        return {"summary": built["summary"]["text"] if built["summary"] else None,
                "recent_user_messages": built["recent_user_messages"],
                "last_assistant_question": built["last_assistant_question"], "tokens": self.estimate_next(),
                "context_tokens": self.context_tokens, "window": self.window,
                "pct": _pct(self.context_tokens, self.window)}   # the toolbar's figure

    def skills_state(self) -> dict[str, Any]:
        try:
            state = self.kb.skills.session(self.session_id)
        except NotFoundError:
            return {"loaded": [], "skills": []}
        return {"loaded": state["loaded"], "skills": state["skills"]}

    def history(self) -> list[StoredMessage]:
        try:
            return self.kb.context.show(self.session_id)["messages"]
        except NotFoundError:
            return []

    def feedback(self, helpful: list[str], not_helpful: list[str]) -> FeedbackResult:
        if self.source.mode != "kb":
            raise UsageError("feedback needs a knowledge base: free mode retrieves nothing")
        if self.last_query_id is None:
            raise UsageError("no retrieval yet in this chat: ask something first")
        return self.kb.learning.feedback(self.last_query_id, helpful=list(helpful), not_helpful=list(not_helpful))

    def clear(self) -> str:
        self.session_id = new_session_id()
        self.last_query_id, self.last_paths = None, []
        self.context_tokens = self.estimate_next()
        return self.session_id

    def resume(self, session_id: str) -> dict[str, Any]:
        try:
            shown = self.kb.context.show(session_id)
        except NotFoundError:
            raise NotFoundError(f"Unknown chat session: {session_id!r} (`kbindex chat --list` lists them)") from None
        self.session_id = shown["session"]
        self.last_query_id, self.last_paths = None, []
        self.context_tokens = self.estimate_next()
        return {"session": self.session_id, "messages": shown["count"]}

    @staticmethod
    def list_sessions(db: Any = None, *, free: bool = False) -> dict[str, Any]:
        """The saved chat sessions, most recent first, each with ``first_message``: the start of its first
        user message (one line, at most ``PREVIEW_CHARS`` characters)."""
        kb, source, _ = open_source(db, free)
        try:
            sessions = [dict(s) for s in kb.context.sessions()["sessions"] if s["session"].startswith("chat-")]
            for s in sessions:
                s["first_message"] = _preview(kb.context.show(str(s["session"]))["messages"])
        finally:
            kb.close()
        return {"source": source.to_dict(), "sessions": sessions, "count": len(sessions)}

    # -- conventions: /compact, /export, @path completion ----------------------------------------------------
    def compact(self) -> dict[str, Any]:
        """Fold every turn but the last into the rolling summary now (the LLM's, else extractive)."""
        before = self.estimate_next()
        if not [m for m in self.history() if m["role"] == "user"][:-1]:
            return {"compacted": False, "reason": "nothing to compact: fewer than two turns in this session",
                    "tokens_before": before, "tokens_after": before}
        use_llm = bool(self.client.config.enabled)
        built = self.kb.context.build(self.session_id, "(compact)", recent=1, summary_after=1, use_llm=use_llm,
                                      client=self.client if use_llm else None)
        refresh = built["stats"]["summary_refresh"]
        self.context_tokens = after = self.estimate_next()
        return {"compacted": bool(refresh.get("refreshed")), "folded_messages": refresh.get("folded_messages", 0),
                "source": refresh.get("source"), "fallback": refresh.get("fallback"),
                "tokens_before": before, "tokens_after": after}

    def export(self, args: list[str]) -> dict[str, Any]:
        """``/export [md|json] [PATH]`` (see :mod:`kb_indexer.chat.export`)."""
        fmt, path = export.parse_args(args, self.session_id)
        try:
            shown: dict[str, Any] | None = dict(self.kb.context.show(self.session_id))
        except NotFoundError:
            shown = None
        data = export.session_data(self.session_id, self.source.to_dict(), shown)
        written = export.write(data, fmt, path)
        return {"path": str(written), "format": fmt, "messages": len(data["messages"]), "session": self.session_id}

    def document_paths(self) -> list[str]:
        """The indexed documents' paths (for ``@`` completion); none in free mode."""
        if self.source.mode != "kb":
            return []
        return [d["filepath"] for d in self.kb.list_docs()["documents"]]

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            self.kb.close()


def _preview(messages: list[Any]) -> str | None:
    first = next((m for m in messages if m["role"] == "user"), None)
    if first is None:
        return None
    text = " ".join(str(first["content"]).split())
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS - 1] + "…"


__all__ = ["ChatEngine", "Event", "KbError", "ToolCall"]
