"""Plain JSON-over-HTTP for the backends that talk to their server with httpx directly (OpenAI-compatible,
Gemini): one guarded client, and one mapping of transport failures, HTTP statuses and replies to
:class:`~kb_indexer.llm.base.LLMError`.

The client's transports are wrapped in :class:`~kb_indexer.llm.guard.GuardedTransport`, so a call's
``timeout`` is a deadline for all of it (a trickling or endless body included) and replies are
size-capped. A client made with ``follow_redirects=False`` (Gemini, whose key travels in a header)
turns a redirect into an error: the key is never sent anywhere but the configured server.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

import httpx

from kb_indexer.llm.base import (LLMBadResponse, LLMError, LLMTimeout, LLMUnavailable, error_for_status,
                                 parse_retry_after)
from kb_indexer.llm.guard import Budget, guard_client


def guarded_client(base_url: str, headers: dict[str, str], timeout: float, budget: Budget, *,
                   follow_redirects: bool, transport: httpx.BaseTransport | None = None) -> httpx.Client:
    """An httpx client for ``base_url`` whose every request (proxies included) keeps ``budget``."""
    return guard_client(httpx.Client(base_url=base_url, headers=headers, timeout=timeout, transport=transport,
                                     follow_redirects=follow_redirects), budget)


def send(http: httpx.Client, method: str, path: str, *, timeout: float, body: dict[str, Any] | None = None,
         stream: bool = False, params: dict[str, str] | None = None) -> httpx.Response:
    """One request; transport failures become ``LLMTimeout`` / ``LLMUnavailable`` / ``LLMBadResponse``."""
    url = f"{str(http.base_url).rstrip('/')}/{path.lstrip('/')}"
    try:
        req = http.build_request(method, path, json=body, timeout=timeout, params=params)
        return http.send(req, stream=stream)
    except httpx.TimeoutException as exc:
        raise LLMTimeout(f"no answer from {url} within {timeout:g}s ({type(exc).__name__})") from None
    except httpx.TransportError as exc:
        raise LLMUnavailable.from_transport(f"cannot reach {url}: {exc or type(exc).__name__}", exc) from None
    except httpx.HTTPError as exc:
        raise LLMBadResponse(f"bad HTTP answer from {url}: {exc or type(exc).__name__}") from None


def open_stream(resp: httpx.Response, check: Any) -> httpx.Response:
    """A streamed reply that ``check`` accepted (an error closes it before it propagates)."""
    try:
        check(resp)
    except LLMError:
        resp.close()
        raise
    return resp


def error_message(resp: httpx.Response) -> str:
    """The reply's ``{"error": {"message": ...}}`` (or ``{"error": "..."}``), else its text."""
    try:
        text = resp.read().decode("utf-8", "replace")
    except (httpx.HTTPError, LLMError):
        return ""
    try:
        err = json.loads(text).get("error")
        message = err.get("message", text) if isinstance(err, dict) else (err or text)
    except (json.JSONDecodeError, AttributeError):
        message = text
    return str(message)


def raise_for(resp: httpx.Response, model: str | None) -> None:
    """An ``LLMError`` for a reply that is not a success (a redirect that was not followed included)."""
    if resp.status_code < 300:
        return
    if resp.status_code < 400:
        resp.close()
        raise LLMError(f"{resp.request.url.copy_with(query=None)} answered HTTP {resp.status_code}, a redirect to "
                       f"{resp.headers.get('location', '?')[:200]!r}; kbindex does not follow it (the API key is "
                       "only ever sent to the configured server)", status=resp.status_code)
    raise error_for_status(resp.status_code, error_message(resp), model=model,
                           retry_after=parse_retry_after(resp.headers.get("retry-after")))


def json_object(resp: httpx.Response) -> dict[str, Any]:
    """The reply's body as a JSON object, else ``LLMBadResponse``."""
    try:
        data = resp.json()
    except ValueError:  # JSONDecodeError, UnicodeDecodeError
        raise LLMBadResponse(f"the server's reply is not JSON: {resp.text[:200]!r}") from None
    if not isinstance(data, dict):
        raise LLMBadResponse(f"the server's reply is not a JSON object: {resp.text[:200]!r}")
    return data


def sse_events(resp: httpx.Response, where: str, timeout: float) -> Iterator[dict[str, Any]]:
    """The JSON objects of a server-sent event stream (``data: {...}`` lines; ``data: [DONE]`` ends it).
    Closes the response; a stalled or broken stream is an ``LLMTimeout`` / ``LLMUnavailable``; a reply with no
    event at all (a server that ignored ``stream`` and answered one JSON body) is an ``LLMBadResponse``."""
    events, other = 0, ""
    try:
        for line in resp.iter_lines():
            if not line.startswith("data:"):
                other = other or line.strip()
                continue
            payload = line[5:].strip()
            events += 1
            if payload == "[DONE]":
                break
            try:
                data = json.loads(payload)
            except json.JSONDecodeError:
                raise LLMBadResponse(f"bad stream event: {payload[:200]!r}") from None
            if not isinstance(data, dict):
                raise LLMBadResponse(f"bad stream event: {payload[:200]!r}")
            yield data
        if not events and other:
            raise LLMBadResponse(f"the server did not answer with an event stream: {other[:200]!r}")
    except httpx.TimeoutException:
        raise LLMTimeout(f"the stream from {where} stalled for {timeout:g}s") from None
    except httpx.TransportError as exc:
        raise LLMUnavailable(f"the stream from {where} broke: {exc}") from None
    finally:
        resp.close()
