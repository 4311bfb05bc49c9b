"""Test helpers: a scripted HTTP server on 127.0.0.1 (stdlib only) and port helpers.

The server records every request (method, path, query, headers, JSON body) and
answers from per-path queues of :class:`Reply` objects, so tests can check the
exact request a backend's SDK sends and feed it any status, body, delay,
stream or dropped connection.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Reply:
    status: int = 200
    body: Any = None                 # dict/list -> JSON, str/bytes as is
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0               # seconds before answering (timeouts)
    chunks: list[str] | None = None  # streamed pieces (SSE / NDJSON), flushed one by one
    drop: bool = False               # close the connection without answering

    def payload(self) -> bytes:
        if self.body is None:
            return b""
        if isinstance(self.body, bytes):
            return self.body
        if isinstance(self.body, str):
            return self.body.encode()
        return json.dumps(self.body).encode()


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class FakeServer:
    def __init__(self) -> None:
        self.requests: list[Request] = []
        self._queues: dict[str, deque[Reply]] = {}
        self._routes: dict[str, Callable[[Request], Reply]] = {}
        self._lock = threading.Lock()
        self.rewrite: Callable[[str], str] | None = None  # normalise request paths before matching
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                req = Request(self.command, parts.path, parse_qs(parts.query),
                              {k.lower(): v for k, v in self.headers.items()}, body)
                reply = server._reply_for(req)
                try:
                    self._write(reply)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _write(self, reply: Reply) -> None:
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.drop:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if reply.chunks is not None:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.headers.get("Content-Type", "text/event-stream"))
                    self.send_header("Transfer-Encoding", "chunked")
                    for k, v in reply.headers.items():
                        if k != "Content-Type":
                            self.send_header(k, v)
                    self.end_headers()
                    for piece in reply.chunks:
                        data = piece.encode()
                        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                    return
                data = reply.payload()
                self.send_response(reply.status)
                headers = {"Content-Type": "application/json", **reply.headers}
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = _handle

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()

    def expect(self, path: str, *replies: Reply) -> "FakeServer":
        """Queue replies for ``path`` (answered in order, once each)."""
        with self._lock:
            self._queues.setdefault(path, deque()).extend(replies)
        return self

    def route(self, path: str, fn: Callable[[Request], Reply]) -> "FakeServer":
        """Answer every request to ``path`` with ``fn(request)`` (after the queue is empty)."""
        self._routes[path] = fn
        return self

    def _reply_for(self, req: Request) -> Reply:
        if self.rewrite is not None:
            req.path = self.rewrite(req.path)
        with self._lock:
            self.requests.append(req)
            queue = self._queues.get(req.path)
            if queue:
                return queue.popleft()
        if req.path in self._routes:
            return self._routes[req.path](req)
        return Reply(404, {"error": f"no scripted reply for {req.method} {req.path}"})

    def posts(self, path: str | None = None) -> list[Request]:
        return [r for r in self.requests if r.method == "POST" and (path is None or r.path == path)]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# -- canned bodies --------------------------------------------------------------------------


def openai_reply(content: str, finish: str = "stop", tool_calls: list | None = None) -> dict:
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        msg["tool_calls"] = tool_calls
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


def openai_models(*ids: str) -> dict:
    return {"object": "list", "data": [{"id": i, "object": "model"} for i in ids]}


def ollama_reply(content: str, done_reason: str = "stop", model: str = "llama3.2:3b") -> dict:
    return {"model": model, "created_at": "2025-01-01T00:00:00Z", "message": {"role": "assistant", "content": content},
            "done": True, "done_reason": done_reason, "prompt_eval_count": 12, "eval_count": 4}


def gemini_reply(text: str, finish: str = "STOP") -> dict:
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": finish,
                            "index": 0}],
            "usageMetadata": {"promptTokenCount": 11, "candidatesTokenCount": 3, "totalTokenCount": 14},
            "modelVersion": "gemini-2.5-flash"}
