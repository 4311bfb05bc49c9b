"""LLM fault stress: every LLM command against a misbehaving server must fall back and say so, on time.

    python bench/stress_llm.py [--quick] [--timeout 3] [--grace 5] [--protocols gemini,openai]

A loopback fault server (127.0.0.1 only, stdlib, stops by itself) speaks the
Ollama protocol (``/api/chat``, ``/api/embed``, ``/api/tags``), the OpenAI-compatible one
(``/v1/chat/completions``, ``/v1/embeddings``, ``/v1/models``) and Gemini's REST API
(``/v1beta/models/<model>:generateContent``, ``:batchEmbedContents``, ``GET /v1beta/models/<model>``).
The fault is the first path segment
of the server URL (``http://127.0.0.1:PORT/<fault>``), and every endpoint under it
misbehaves that way:

=============  ===========================================================
``ok``         a valid answer for the schema asked (the control case)
``stall``      reads the request, never answers
``http500``    500 every time
``http429``    429 with ``Retry-After: 8`` every time
``truncated``  announces a body, sends a piece of it and closes
``nonjson``    200 with an HTML page
``envelope``   200 JSON without ``message`` (Ollama) / ``choices`` (OpenAI) / ``candidates`` (Gemini)
``wrong_schema`` a valid envelope whose answer does not match the schema
``endless``    200 with a body that never ends, as fast as it can
``trickle``    200, one byte every 0.2 s
``slowheaders`` the status line, then a header one byte every 0.2 s (the headers never end)
=============  ===========================================================

Not in the suite: ``redirect`` answers 307 to ``FaultServer(redirect_to=URL)`` + the same path (a
backend must not send its key there). Every request's path and headers are kept in ``FaultServer.seen``.

For each protocol and fault it runs, through this checkout's ``kbindex`` (or ``--kbindex``) on
a copy of the bundled knowledge base, ``similar --user-context``, ``query
--context`` and ``doctor`` with ``--llm-timeout``, and checks: the command ends
within the timeout plus a grace (process start-up), the exit code is 0, stdout is
one JSON object, and the LLM report is flagged (a fallback with its error; for
``ok``, the LLM was used). It prints a table of cases with durations and failures,
beside the baseline measured in the same run: the same command with
``--llm-backend none`` (no LLM at all), i.e. the process's own time.

Importable: ``run(quick=True) -> dict`` (``{"cases", "failures", "max_seconds", "rows"}``)
for ``bench/stress.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FAULTS = ("ok", "stall", "http500", "http429", "truncated", "nonjson", "envelope", "wrong_schema", "endless",
          "trickle", "slowheaders")
QUICK_FAULTS = ("ok", "stall", "http429", "nonjson", "envelope", "endless", "trickle", "slowheaders")
PROTOCOLS = ("ollama", "openai", "gemini")
MODEL = "stress-model:1"
MAX_STALL = 120.0             # no handler waits longer than this, whatever happens
MAX_BODY = 256 * 1024 * 1024  # the endless body ends here at the latest
TRICKLE_GAP = 0.2


# -- the fault server ----------------------------------------------------------------------


def _instance(schema: Any) -> Any:
    """A small value valid for the simple schemas kbindex sends."""
    if not isinstance(schema, dict):
        return None
    if "enum" in schema:
        values = schema["enum"]
        return values[len(values) // 2]
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: _instance(props.get(k, {})) for k in schema.get("required") or list(props)}
    if kind == "array":
        return []
    if kind == "boolean":
        return True
    if kind == "integer":
        return max(0, int(schema.get("minimum", 0)))
    if kind == "number":
        return float(schema.get("minimum", 0))
    if kind == "string":
        return "x"
    return None


def _schema_of(body: dict) -> Any:
    if isinstance(body.get("format"), dict):                      # Ollama
        return body["format"]
    gen = body.get("generationConfig")
    if isinstance(gen, dict):                                      # Gemini
        return gen.get("responseJsonSchema") or {}
    fmt = body.get("response_format") or {}                       # OpenAI-compatible
    if isinstance(fmt.get("json_schema"), dict):
        return fmt["json_schema"].get("schema")
    return fmt.get("schema") or {}


class FaultServer:
    """The loopback fault server; ``url(fault)`` is a base URL for a backend. Stops after
    ``lifetime`` seconds at the latest (or on :meth:`close`)."""

    def __init__(self, lifetime: float = 1800.0, redirect_to: str | None = None):
        self.stop = threading.Event()
        self.requests = 0
        self.seen: list[dict[str, Any]] = []   # {"path", "headers"} of every request
        self.redirect_to = redirect_to
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._serve({})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    body = {}
                self._serve(body if isinstance(body, dict) else {})

            def _serve(self, body: dict) -> None:
                outer.requests += 1
                outer.seen.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}})
                _, fault, rest = (self.path.split("?")[0] + "/").split("/", 2)
                try:
                    outer._answer(self, fault, "/" + rest.rstrip("/"), body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self._timer = threading.Timer(lifetime, self.close)
        self._timer.daemon = True
        self._timer.start()

    def url(self, fault: str) -> str:
        return f"http://127.0.0.1:{self.port}/{fault}"

    def close(self) -> None:
        self.stop.set()
        self._timer.cancel()
        self._server.shutdown()
        self._server.server_close()

    # -- answers -------------------------------------------------------------------------
    @staticmethod
    def _send(h: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict | None = None) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)
        h.wfile.flush()

    @staticmethod
    def _good(endpoint: str, content: str, body: dict | None = None) -> Any:
        if endpoint.startswith("/v1beta/"):
            return _gemini_good(endpoint, content, body or {})
        if endpoint == "/api/tags":
            return {"models": [{"name": MODEL, "model": MODEL}]}
        if endpoint == "/api/embed":
            return {"model": MODEL, "embeddings": [VECTOR for _ in _inputs(body)]}
        if endpoint == "/v1/embeddings":
            return {"object": "list", "data": [{"index": i, "embedding": VECTOR} for i, _ in enumerate(_inputs(body))]}
        if endpoint == "/v1/models":
            return {"object": "list", "data": [{"id": MODEL, "object": "model"}]}
        if endpoint.startswith("/v1/"):
            return {"id": "c1", "object": "chat.completion", "model": MODEL,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                 "finish_reason": "stop"}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
        return {"model": MODEL, "created_at": "2026-01-01T00:00:00Z", "done": True, "done_reason": "stop",
                "message": {"role": "assistant", "content": content}}

    def _answer(self, h: BaseHTTPRequestHandler, fault: str, endpoint: str, body: dict) -> None:
        if fault == "ok":
            self._send(h, 200, self._good(endpoint, json.dumps(_instance(_schema_of(body))), body))
        elif fault == "wrong_schema":
            self._send(h, 200, self._good(endpoint, json.dumps({"unexpected": True}), body))
        elif fault == "redirect" and self.redirect_to:
            h.send_response(307)
            h.send_header("Location", self.redirect_to.rstrip("/") + "/" + h.path.split("/", 2)[-1])
            h.send_header("Content-Length", "0")
            h.end_headers()
        elif fault == "http500":
            self._send(h, 500, {"error": "internal failure"})
        elif fault == "http429":
            self._send(h, 429, {"error": {"message": "slow down"}}, {"Retry-After": "8"})
        elif fault == "nonjson":
            page = b"<html><body>502 Bad Gateway</body></html>"
            h.send_response(200)
            h.send_header("Content-Type", "text/html")
            h.send_header("Content-Length", str(len(page)))
            h.end_headers()
            h.wfile.write(page)
        elif fault == "envelope":
            self._send(h, 200, {"object": "chat.completion"} if endpoint.startswith("/v1/")
                       else {"modelVersion": MODEL} if endpoint.startswith("/v1beta/")
                       else {"model": MODEL, "done": True})
        elif fault == "truncated":
            full = json.dumps(self._good(endpoint, '{"ok": true}')).encode()
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(full)))
            h.end_headers()
            h.wfile.write(full[: len(full) // 3])
            h.wfile.flush()
            h.close_connection = True
        elif fault == "stall":
            self.stop.wait(MAX_STALL)
            h.close_connection = True
        elif fault == "endless":
            self._stream(h, b'{"message": {"role": "assistant", "content": "' + b"a" * 65536, 0.0)
        elif fault == "trickle":
            self._stream(h, b"{", TRICKLE_GAP)
        elif fault == "slowheaders":
            self._slow_headers(h)
        else:
            self._send(h, 404, {"error": f"unknown fault {fault!r}"})

    def _slow_headers(self, h: BaseHTTPRequestHandler) -> None:
        """A status line, then a header that never ends, one byte every ``TRICKLE_GAP`` s (each within any
        read timeout), bounded by ``MAX_STALL`` and the server's stop."""
        h.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        started = time.monotonic()
        while not self.stop.is_set() and time.monotonic() - started < MAX_STALL:
            h.wfile.write(b"a")
            h.wfile.flush()
            self.stop.wait(TRICKLE_GAP)
        h.close_connection = True

    def _stream(self, h: BaseHTTPRequestHandler, piece: bytes, gap: float) -> None:
        """A body that does not end: ``piece`` again and again (every ``gap`` s), bounded by
        ``MAX_BODY``, ``MAX_STALL`` and the server's stop."""
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(MAX_BODY))
        h.end_headers()
        sent, started = 0, time.monotonic()
        while sent < MAX_BODY and not self.stop.is_set() and time.monotonic() - started < MAX_STALL:
            h.wfile.write(piece)
            h.wfile.flush()
            sent += len(piece)
            if gap:
                self.stop.wait(gap)
        h.close_connection = True


VECTOR = [0.6, 0.8, 0.0]


def _inputs(body: dict | None) -> list:
    """The texts of an Ollama (``input``) or OpenAI (``input``) embedding request."""
    value = (body or {}).get("input")
    return value if isinstance(value, list) else [value]


def _gemini_good(endpoint: str, content: str, body: dict) -> Any:
    """A valid Gemini REST answer: a model (``GET models/<m>``), a model list, embeddings or a candidate."""
    if endpoint == "/v1beta/models":
        return {"models": [{"name": f"models/{MODEL}"}]}
    if endpoint.endswith(":batchEmbedContents"):
        return {"embeddings": [{"values": VECTOR} for _ in body.get("requests") or []]}
    if not endpoint.endswith("Content"):   # not :generateContent / :streamGenerateContent: GET models/<m>
        return {"name": f"models/{MODEL}", "displayName": MODEL}
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": content}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1}, "modelVersion": MODEL}


# -- the commands --------------------------------------------------------------------------


_CMD: list[str] | None = None   # --kbindex: another build to compare (e.g. the baseline)


def kbindex_cmd() -> list[str]:
    """``--kbindex`` when given, else this checkout's kbindex (never a stale install first on PATH)."""
    return list(_CMD) if _CMD else [sys.executable, str(REPO / "kbindex.py")]


def make_kb(where: Path) -> Path:
    """A copy of the bundled knowledge base, indexed, with its similarities imported."""
    project = where / "project"
    shutil.copytree(REPO / "knowledge-base", project / "knowledge-base")
    shutil.copy(REPO / "similarities.json", project / "similarities.json")
    env = _base_env()
    for args in (["init"], ["sync"], ["import-similarities", "similarities.json"]):
        proc = subprocess.run(kbindex_cmd() + args, cwd=project, env=env, capture_output=True, text=True,
                              timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"kbindex {' '.join(args)} failed: {proc.stderr.strip()}")
    return project


def _base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KBINDEX_", "OLLAMA_", "OPENAI_", "GEMINI_",
                                                                    "GOOGLE_"))}
    env["KBINDEX_NO_DOTENV"] = "1"
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


COMMANDS = {
    "similar": ["similar", "reinforcement learning", "--user-context", "game playing agents",
                "--context-threshold", "0.5"],
    "query": ["query", "agents for board games", "-k", "reinforcement learning", "--context", "game AI"],
    "doctor": ["doctor"],
}


def _llm_flagged(command: str, data: dict, fault: str) -> str | None:
    """None when the JSON says what happened; else what is wrong."""
    llm = data.get("llm")
    if not isinstance(llm, dict):
        return "no llm object"
    if command == "doctor":
        if fault == "ok":
            return None if data.get("ok") and llm.get("structured_output") else f"doctor not ok: {data.get('problems')}"
        return None if data.get("problems") and data.get("ok") is False else "doctor reported no problem"
    if fault == "ok":
        return None if llm.get("used") and not llm.get("fallback") else f"LLM not used: {llm.get('error')}"
    return None if llm.get("fallback") == "lexical" and llm.get("error") else f"fallback not flagged: {llm}"


STRESS_KEY = "stress-key-not-a-secret"


def endpoint_env(protocol: str, url: str) -> dict[str, str]:
    """The environment that points ``protocol``'s backend at the fault server's ``url`` (Gemini needs a key)."""
    if protocol == "ollama":
        return {"OLLAMA_HOST": url}
    if protocol == "gemini":
        return {"KBINDEX_GEMINI_BASE_URL": url, "GEMINI_API_KEY": STRESS_KEY}
    return {"KBINDEX_OPENAI_BASE_URL": url + "/v1"}


def baseline(project: Path, command: str) -> float:
    """Seconds of ``command`` with ``--llm-backend none``: the same process without any LLM call."""
    started = time.monotonic()
    subprocess.run(kbindex_cmd() + COMMANDS[command] + ["--llm-backend", "none", "--format", "json"], cwd=project,
                   env=_base_env(), capture_output=True, text=True, timeout=300)
    return round(time.monotonic() - started, 2)


def run_case(project: Path, server: FaultServer, protocol: str, fault: str, command: str,
             timeout: float, grace: float) -> dict[str, Any]:
    env = _base_env()
    env.update(endpoint_env(protocol, server.url(fault)))
    args = COMMANDS[command] + ["--llm-backend", protocol, "--llm-model", MODEL, "--llm-timeout", f"{timeout:g}",
                                "--format", "json"]
    if command != "doctor":
        args.append("--no-cache")
    row: dict[str, Any] = {"protocol": protocol, "fault": fault, "command": command, "exit": None,
                           "seconds": None, "problem": None}
    started = time.monotonic()
    try:
        proc = subprocess.run(kbindex_cmd() + args, cwd=project, env=env, capture_output=True, text=True,
                              timeout=timeout + grace + 60)
    except subprocess.TimeoutExpired:
        row.update(seconds=round(time.monotonic() - started, 2), problem="hung (killed)")
        return row
    row["seconds"] = round(time.monotonic() - started, 2)
    row["exit"] = proc.returncode
    problems = []
    if row["seconds"] > timeout + grace:
        problems.append(f"took {row['seconds']}s > {timeout + grace:g}s")
    if proc.returncode != 0:
        problems.append(f"exit {proc.returncode}: {' '.join(proc.stderr.split())[-160:]}")
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        problems.append(f"stdout is not JSON: {proc.stdout[:100]!r}")
    else:
        flag = _llm_flagged(command, data, fault) if isinstance(data, dict) else "stdout is not an object"
        if flag:
            problems.append(flag)
    row["problem"] = "; ".join(problems) or None
    return row


def run(quick: bool = True, timeout: float = 3.0, grace: float = 5.0, verbose: bool = False,
        protocols: tuple[str, ...] = PROTOCOLS) -> dict[str, Any]:
    """Every protocol x fault x command; ``{"cases", "failures", "max_seconds", "baseline_seconds", "rows"}``."""
    faults = QUICK_FAULTS if quick else FAULTS   # read at call time (--faults changes QUICK_FAULTS)
    rows = []
    with tempfile.TemporaryDirectory(prefix="kbindex-stress-llm-") as tmp:
        project = make_kb(Path(tmp))
        base = {command: baseline(project, command) for command in COMMANDS}
        server = FaultServer()
        try:
            for protocol in protocols:
                for fault in faults:
                    for command in COMMANDS:
                        row = run_case(project, server, protocol, fault, command, timeout, grace)
                        row["baseline_seconds"] = base[command]
                        rows.append(row)
                        if verbose:
                            print(_line(row), flush=True)
        finally:
            server.close()
    failures = [r for r in rows if r["problem"]]
    peak_mb = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)  # Linux: KiB
    return {"cases": len(rows), "failures": len(failures), "timeout": timeout, "grace": grace,
            "max_child_rss_mb": peak_mb,
            "max_seconds": max((r["seconds"] or 0) for r in rows) if rows else 0.0,
            "baseline_seconds": base if rows else {}, "rows": rows}


def _line(r: dict[str, Any]) -> str:
    return (f"{r['protocol']:<7} {r['fault']:<13} {r['command']:<8} exit={r['exit']!s:<4} "
            f"{r['seconds']!s:>6}s  {r.get('baseline_seconds')!s:>6}s  {r['problem'] or 'ok'}")


def main(argv: list[str] | None = None) -> int:
    global _CMD, QUICK_FAULTS
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"only the faults {', '.join(QUICK_FAULTS)}")
    parser.add_argument("--timeout", type=float, default=3.0, help="--llm-timeout for every command (s)")
    parser.add_argument("--grace", type=float, default=5.0, help="allowed beyond the timeout (process start-up)")
    parser.add_argument("--kbindex", help="the command to test instead of this checkout's kbindex, e.g. "
                        "'python -m kb_indexer' with PYTHONPATH pointing at another checkout (a baseline)")
    parser.add_argument("--faults", help="comma-separated subset of: " + ", ".join(FAULTS))
    parser.add_argument("--protocols", help="comma-separated subset of: " + ", ".join(PROTOCOLS))
    args = parser.parse_args(argv)
    if args.kbindex:
        _CMD = shlex.split(args.kbindex)
    if args.faults:
        QUICK_FAULTS = tuple(f.strip() for f in args.faults.split(",") if f.strip() in FAULTS)
        args.quick = True
    print(f"{'proto':<7} {'fault':<13} {'command':<8} exit      seconds  no-LLM  result")
    protocols = tuple(p.strip() for p in (args.protocols or "").split(",") if p.strip() in PROTOCOLS) or PROTOCOLS
    out = run(quick=args.quick, timeout=args.timeout, grace=args.grace, verbose=True, protocols=protocols)
    print(f"\n{out['cases']} cases, {out['failures']} failures; slowest {out['max_seconds']}s "
          f"(limit: --llm-timeout {args.timeout:g}s + {args.grace:g}s grace); largest kbindex process "
          f"{out['max_child_rss_mb']} MB")
    return 1 if out["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
