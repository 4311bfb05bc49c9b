"""A stand-in for kb_indexer.chat.engine.ChatEngine (the contract the chat front end renders), for testing the
front end alone: in-process, and in a pseudo-terminal through ``python -m chat_fake_engine`` (tests/ on
PYTHONPATH).

What a turn does is chosen by the message:

* ``fail ...``: an ``error`` event (as for an LLM failure), no ``done``;
* ``slow ...``: a first chunk "Streaming", then a chunk every 0.05 s for a minute (time to press Ctrl-C);
* ``tool ...``: a tool call and its result before the answer;
* ``long N``: an answer of N numbered markdown lines;
* anything else: ``**Answer** to: <normalised message>`` streamed word by word, citing the retrieval.

Saved and cancelled turns are appended to ``FAKE_CHAT_LOG`` (a file) when set.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from typing import Iterator

from kb_indexer.errors import KbError, NotFoundError


@dataclass
class Event:
    kind: str
    data: dict


RESULTS = [{"path": "notes/alpha.md", "title": "Alpha", "score": 0.91},
           {"path": "notes/beta.md", "title": "Beta", "score": 0.42}]


class FakeEngine:
    def __init__(self, mode: str = "kb", *, stream: bool = True, session: str = "s1"):
        self.mode = mode
        self.stream = stream
        self.source = ({"mode": "kb", "name": "notes", "db": "/tmp/notes/kbindex.db", "kb_root": "/tmp/notes"}
                       if mode == "kb" else {"mode": "free", "name": None, "db": "/tmp/chat.db", "kb_root": None})
        self.note = None if mode == "kb" else "no index found: free mode"
        self.session_id = session
        self.prompt = "kbindex[notes]> " if mode == "kb" else "kbindex> "
        self.model_label = "fake/fake-model"
        self.messages: list[dict] = []
        self.sessions = {session: self.messages}
        self.turns: list[str] = []          # texts of turns started
        self.cancelled: list[str] = []
        self.last_retrieval = None
        self.closed = False

    @classmethod
    def open(cls, db=None, *, free=False, resume=None, llm=None, stream=True, window=None) -> "FakeEngine":
        return cls("free" if free else "kb", stream=stream)

    def check_llm(self) -> None:
        pass

    def _log(self, line: str) -> None:
        path = os.environ.get("FAKE_CHAT_LOG")
        if path:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")

    # -- a turn -----------------------------------------------------------------------------------------
    def turn(self, text: str) -> Iterator[Event]:
        self.turns.append(text)
        normalised = text.replace("please ", "")
        yield Event("input", {"original": text, "normalised": normalised})
        yield Event("skills", {"loaded": ["kbindex-search"], "newly_loaded": ["kbindex-search"], "evicted": []})
        citations = []
        if self.mode == "kb":
            self.last_retrieval = 7
            citations = [r["path"] for r in RESULTS]
            yield Event("retrieval", {"query_id": 7, "results": RESULTS, "total": 5})
        try:
            if text.startswith("fail"):
                yield Event("error", {"message": "LLM ollama unreachable at http://127.0.0.1:11434",
                                      "code": "llm_unavailable"})
                return
            answer = yield from self._answer(text, normalised)
        except (GeneratorExit, KeyboardInterrupt):   # closed by the front end, or Ctrl-C while waiting here
            self.cancelled.append(text)
            self._log(f"cancelled: {text}")
            raise
        self.messages += [{"seq": len(self.messages) + 1, "role": "user", "content": text, "created_at": "t"},
                          {"seq": len(self.messages) + 2, "role": "assistant", "content": answer,
                           "created_at": "t"}]
        self._log(f"saved: {text}")
        yield Event("done", {"answer": answer, "citations": citations, "usage": {"completion_tokens": 3},
                             "session": self.session_id})

    def _answer(self, text: str, normalised: str):
        if text.startswith("tool"):
            yield Event("tool_call", {"name": "query", "arguments": {"question": "alpha"}})
            yield Event("tool_result", {"name": "query", "ok": True, "summary": "2 documents"})
        if text.startswith("slow"):
            yield Event("text", {"text": "Streaming"})
            for _ in range(1200):
                time.sleep(0.05)
                yield Event("text", {"text": "."})
            return "slow answer"
        if text.startswith("long"):
            answer = "\n".join(f"{i}. line {i}" for i in range(1, int(text.split()[1]) + 1))
        else:
            answer = f"**Answer** to: {normalised}"
        if not self.stream:
            yield Event("text", {"text": answer})
        else:
            for i, word in enumerate(answer.split(" ")):
                yield Event("text", {"text": word if i == 0 else " " + word})
        return answer

    # -- state ------------------------------------------------------------------------------------------
    def status(self) -> dict:
        return {"model": self.model_label, "window": 8192, "context_tokens": 2048, "context_pct": 25.0,
                "loaded_skills": ["kbindex-search"] if self.turns else [], "session": self.session_id,
                "source": self.source}

    def context_preview(self) -> dict:
        users = [m["content"] for m in self.messages if m["role"] == "user"]
        return {"summary": None, "recent_user_messages": users, "last_assistant_question": None,
                "tokens": 120, "window": 8192, "pct": 1.5}

    def skills_state(self) -> dict:
        return {"loaded": ["kbindex-search"],
                "skills": [{"name": "kbindex-search", "priority": "active", "loaded": True, "match_count": 2}]}

    def history(self) -> list[dict]:
        return list(self.messages)

    def feedback(self, helpful: list[str], not_helpful: list[str]) -> dict:
        if self.mode == "free":
            raise KbError("free mode has no knowledge base: no retrieval to give feedback on", code="usage")
        if self.last_retrieval is None:
            raise KbError("no retrieval yet in this session", code="usage")
        return {"query_id": self.last_retrieval, "helpful": helpful, "not_helpful": not_helpful}

    def clear(self) -> str:
        self.session_id = f"s{len(self.sessions) + 1}"
        self.messages = []
        self.sessions[self.session_id] = self.messages
        return self.session_id

    def resume(self, session_id: str) -> dict:
        if session_id not in self.sessions:
            raise NotFoundError(f"no saved session {session_id} (kbindex chat --list shows them)")
        self.session_id = session_id
        self.messages = self.sessions[session_id]
        return {"session": session_id, "messages": len(self.messages)}

    @staticmethod
    def list_sessions(db=None, *, free=False) -> dict:
        return {"sessions": [{"session": "s1", "messages": 2, "updated_at": "2025-01-01T00:00:00Z"}]}

    def close(self) -> None:
        self.closed = True


def main() -> int:
    """Run the interactive front end over a fake engine: ``python -m chat_fake_engine [kb|free]``."""
    from kb_indexer.chat.terminal import run_interactive

    engine = FakeEngine(sys.argv[1] if len(sys.argv) > 1 else "kb")
    try:
        return run_interactive(engine)
    finally:
        engine.close()


if __name__ == "__main__":
    sys.exit(main())
