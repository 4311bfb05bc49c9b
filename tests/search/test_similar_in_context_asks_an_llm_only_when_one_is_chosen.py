"""`similar --user-context`, like `query --context`, asks an LLM only when one is chosen (a flag, the
environment or a .env): with none, the lexical rule answers without reaching for the default backend's server,
and the JSON says why."""

from __future__ import annotations

import socket
import threading

from helpers import kw, write_doc
from kb_indexer.api import QueryOptions
from kb_indexer.llm.config import LLMOptions


class _Listener:
    """A loopback port that counts the connections made to it (an Ollama server would be here)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.sock.settimeout(0.2)
        self.accepted = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.sock.close()


def _games(small):
    k, root = small
    write_doc(root, "alphago.md", "# AlphaGo\n\nA Go program by DeepMind.\n", kw("AlphaGo", "AlphaGo"))
    write_doc(root, "rl.md", "# RL\n\nAgents learn from reward.\n", kw("RL", "RL"))
    assert k.sync()["errors"] == []
    k.relate("RL", "AlphaGo", "application", "A game AI that beat the best players in Go competitions", 0.6)
    return k


def test_no_backend_chosen_means_no_server_is_asked(small, monkeypatch):
    k = _games(small)
    server = _Listener()
    monkeypatch.setenv("OLLAMA_HOST", server.url)   # where the default backend would go
    try:
        similar = k.similar("RL", user_context="game AI and competitions")
        query = k.query("RL in games", options=QueryOptions(context="game AI and competitions"))
    finally:
        server.close()
    assert server.accepted == 0
    assert [s["keyword"] for s in similar["similar_keywords"]] == ["AlphaGo"]   # the lexical rule still fits it
    for out in (similar, query):
        assert out["llm"]["used"] is False and out["llm"]["fallback"] == "lexical"
        assert out["llm"]["reason"].startswith("no LLM backend configured")


def test_a_chosen_backend_is_asked(small, monkeypatch):
    k = _games(small)
    server = _Listener()
    monkeypatch.setenv("OLLAMA_HOST", server.url)
    try:
        out = k.similar("RL", user_context="game AI and competitions",
                        llm=LLMOptions(backend="ollama", timeout=2, retries=0))
    finally:
        server.close()
    assert server.accepted >= 1                      # asked (the server hangs up: the fallback answers)
    assert out["llm"]["used"] is False and out["llm"]["fallback"] == "lexical" and out["llm"]["error"]
