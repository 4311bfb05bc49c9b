"""``kbindex doctor``: is the LLM set up, reachable and answering; where is the index and which schema.

Never raises for an unreachable server, a missing key, a misbehaving server or
a missing index: each becomes a ``problems`` entry in the report, as does an unknown
backend named by the environment or ``.env``. Only bad settings given as flags (an
unknown ``--llm-backend``) are usage errors. The LLM timeout bounds the
LLM checks together (the probe and the test completion share it).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from kb_indexer import __version__
from kb_indexer.config import DbArg, DbTarget, DbUrl, find_db, redact_message, stored_root_path
from kb_indexer.llm import cache as llm_cache
from kb_indexer.llm.base import Backend, LLMError, ProbeResult
from kb_indexer.llm.config import LLMOptions, resolve, resolve_embed, unknown_embed_backend
from kb_indexer.llm.registry import make_backend
from kb_indexer import model_server as local_model
from kb_indexer.llm.settings import LLMConfig
from kb_indexer.llm.structured import LLMClient
from kb_indexer.store.connection import connect
from kb_indexer.store.errors import DatabaseError
from kb_indexer.store.migrations import _applied, known_migrations, schema_version
from kb_indexer.store import meta
from kb_indexer.store.vectors import models as embedding_models, vector_search

PROBE_TIMEOUT = 5.0
LOCAL_PROBE_TIMEOUT = 1.0
ROUNDTRIP_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
                    "additionalProperties": False}


def _llm_report(config: LLMConfig, roundtrip: bool, probe_timeout: float) -> tuple[dict[str, Any], list[str]]:
    info = config.describe()
    report: dict[str, Any] = {
        "backend": config.backend, "model": config.model, "url": config.base_url,
        "sources": info["sources"], "api_key_set": info["api_key_set"], "env_file": info["env_file"],
        "timeout": config.timeout, "reachable": None, "model_available": None, "models": [],
        "latency_ms": None, "structured_output": None, "error": None,
    }
    problems: list[str] = []
    report["model_label"] = model_label(config.backend, config.model, config.enabled)
    if config.backend_error:   # an unknown backend named by the environment or .env
        report["error"] = config.backend_error
        return report, [config.backend_error]
    if not config.enabled:
        report["error"] = "LLM disabled (backend 'none'): features fall back to lexical scoring"
        return report, problems
    try:
        backend = make_backend(config)
    except LLMError as exc:
        report["error"] = exc.message
        problems.append(f"{config.backend}: {exc.message}")
        return report, problems
    deadline = time.monotonic() + config.timeout
    try:
        probe = _probe(backend, min(probe_timeout, config.timeout))
        report.update(url=probe.url, reachable=probe.reachable, model_available=probe.model_available,
                      models=probe.models[:10], error=probe.error)
        report["model"] = getattr(backend, "model", None) or config.model
        report["model_label"] = model_label(config.backend, report["model"], True)
        if not probe.reachable:
            tried = "" if probe.url and probe.url.split("/api/")[0].split("/v1")[0] in (probe.error or "") \
                else f" (tried {probe.url})"
            problems.append(f"{config.backend}: {probe.error}{tried}")
        elif probe.error:
            problems.append(f"{config.backend}: {probe.error}")
        elif probe.model_available is False:
            problems.append(f"{config.backend}: model {report['model']!r} is not available at {probe.url}"
                            + (f" (has: {', '.join(probe.models[:5])})" if probe.models else ""))
        if roundtrip and probe.reachable and probe.model_available is not False and not probe.error:
            left = deadline - time.monotonic()
            if left <= 0.05:
                report["error"] = f"no time left for a test completion within {config.timeout:g}s"
                problems.append(f"{config.backend}: {report['error']}")
            else:
                _roundtrip(replace(config, timeout=left), backend, report, problems)
    finally:
        backend.close()
    return report, problems


def model_label(backend: str, model: str | None, enabled: bool) -> str:
    """The model as a person reads it: its name, or why there is none."""
    if not enabled:
        return "none (LLM disabled)"
    if model:
        return model
    return f"not set (the {backend} server's default model answers)"


def _probe(backend: Backend, timeout: float) -> ProbeResult:
    """``backend.probe``; a backend that fails in a way it did not map is reported, not raised."""
    try:
        return backend.probe(timeout)
    except LLMError as exc:
        return ProbeResult(url=None, reachable=exc.status is not None, error=exc.message)
    except Exception as exc:  # not BaseException: Ctrl-C propagates
        return ProbeResult(url=None, reachable=True, error=f"the probe failed: {type(exc).__name__}: {exc}"[:300])


def _roundtrip(config: LLMConfig, backend: Backend, report: dict[str, Any], problems: list[str]) -> None:
    client = LLMClient(replace(config, retries=0, use_cache=False), backend=backend)
    started = time.monotonic()
    try:
        result = client.structured("doctor", [{"role": "user", "content": 'Reply with {"ok": true}.'}],
                                   ROUNDTRIP_SCHEMA, max_tokens=16)
    except LLMError as exc:
        report["structured_output"] = False
        report["error"] = exc.message
        problems.append(f"{config.backend}: a test completion failed: {exc.message}")
        return
    finally:
        report["latency_ms"] = round((time.monotonic() - started) * 1000, 1)
    report["structured_output"] = isinstance(result.data, dict) and "ok" in result.data


def _db_report(db_path: DbTarget, seen: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The index's report and problems; ``seen["embedding"]``: the backend and model of its newest vectors."""
    exists = isinstance(db_path, DbUrl) or db_path.is_file()  # a server: connecting tells
    report: dict[str, Any] = {"path": str(db_path), "exists": exists, "schema": None,
                              "up_to_date": None, "kb_root": None, "llm_cache_entries": None, "error": None}
    if not report["exists"]:
        return report, [f"no index at {db_path} (run `kbindex init`)"]
    problems: list[str] = []
    try:
        conn = connect(db_path)
    except Exception as exc:  # a KbError for an unusable file
        report["error"] = getattr(exc, "message", str(exc))
        if isinstance(db_path, DbUrl):
            report["exists"] = None   # a server not reached: whether the index is there is not known
        return report, [report["error"]]
    try:
        applied = _applied(conn)
        if applied is None:
            report["error"] = "not a kbindex database"
            return report, [f"{db_path} is not a kbindex database"]
        report["schema"] = schema_version(conn)
        known = known_migrations(conn)
        report["up_to_date"] = applied == known[:len(applied)] and len(applied) == len(known)
        if len(applied) < len(known):
            report["pending_migrations"] = [n for n in known if n not in applied]
        stored = meta.get(conn, "kb_root")
        report["kb_root"] = str(stored_root_path(db_path, stored)) if stored is not None else None
        report["llm_cache_entries"] = llm_cache.stats(conn)["entries"]
        report["vector_search"] = vector_search(conn)
        latest = embedding_models(conn)[0]
        if latest is not None:
            seen["embedding"] = latest.key
    except DatabaseError as exc:
        report["error"] = f"{type(exc).__name__}: {exc}"
        problems.append(f"{db_path}: {report['error']}")
    finally:
        conn.close()
    return report, problems


def _local_model_report(config: LLMConfig, llm: dict[str, Any], llm_problems: list[str]) -> dict[str, Any]:
    """Whether a local model answers on the ``openai`` backend's URL, and what to do about it. With the
    ``openai`` backend chosen, its probe above already says (no second request)."""
    if config.backend == "openai" and config.base_url:
        report: dict[str, Any] = {"url": config.base_url, "running": bool(llm["reachable"]) and not llm["error"],
                                  "models": list(llm["models"])}
    else:
        report = local_model.probe(local_model.configured_url(), LOCAL_PROBE_TIMEOUT)
    if not report["running"]:
        report["hint"] = local_model.START_HINT
        if llm_problems and llm["backend"] != "none":
            llm_problems[0] += f"; no local model answers at {report['url']} either: {local_model.START_HINT}"
    elif llm["backend"] != "openai":
        report["hint"] = f"a local model answers at {report['url']}: KBINDEX_LLM_BACKEND=openai uses it"
    return report


def diagnose(db: DbArg = None, opts: LLMOptions | None = None, *, roundtrip: bool = True,
             probe_timeout: float = PROBE_TIMEOUT) -> dict[str, Any]:
    config = resolve(opts or LLMOptions())
    llm, llm_problems = _llm_report(config, roundtrip, probe_timeout)
    local = _local_model_report(config, llm, llm_problems)
    if config.base_url:   # a server URL with a password in it (http://user:pw@host): shown as ***
        llm.update({k: redact_message(llm[k], config.base_url) for k in ("url", "error") if llm.get(k)})
        local.update({k: redact_message(local[k], config.base_url) for k in ("url", "error") if local.get(k)})
        llm_problems = [redact_message(p, config.base_url) for p in llm_problems]
    seen: dict[str, Any] = {}
    database, db_problems = _db_report(find_db(db), seen)
    embedding, embed_problems = _embedding_report(seen.get("embedding"))
    problems = llm_problems + embed_problems + db_problems
    return {"version": __version__, "llm": llm, "local_model": local, "embedding": embedding, "database": database,
            "problems": problems, "ok": not problems}


def _embedding_report(stored: tuple[str, str] | None) -> tuple[dict[str, Any], list[str]]:
    """The embedding backend and model that ``embed`` and ``query`` use (``KBINDEX_EMBED_*``, else the index's
    newest vectors' model), and for a model computed in this process (``local``) which encoder would
    compute it, or why none can. A server's embedding model is not probed."""
    unknown = unknown_embed_backend()
    config = resolve_embed(None, stored)
    report: dict[str, Any] = {"backend": config.backend, "model": config.model, "sources": config.sources,
                              "encoder": None, "error": unknown}
    if unknown or config.backend != "local":
        return report, [unknown] if unknown else []
    try:
        backend = make_backend(config)
        probe = _probe(backend, PROBE_TIMEOUT)
    except LLMError as exc:
        probe = ProbeResult(url=None, reachable=False, error=exc.message)
    report.update(encoder=probe.encoder, error=probe.error, path=probe.url)
    return report, [f"embedding backend local: {probe.error}"] if probe.error else []
