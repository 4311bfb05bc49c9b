"""The gemini backend (Gemini's REST API over httpx) at the HTTP level, against a scripted server on 127.0.0.1."""

from __future__ import annotations

import json

import pytest
from llm_helpers import Reply, gemini_reply

from kb_indexer.llm.base import (LLMAuthError, LLMBadResponse, LLMConfigError, LLMModelNotFound, LLMServerError,
                                 LLMTimeout, LLMUnavailable, Message, Tool)
from kb_indexer.llm.config import LLMOptions, resolve
from kb_indexer.llm.structured import LLMClient

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
          "additionalProperties": False}
GENERATE = "/v1/models/gemini-2.5-flash:generateContent"
STREAM = "/v1/models/gemini-2.5-flash:streamGenerateContent"


def api_error(code: int, message: str, status: str) -> dict:
    return {"error": {"code": code, "message": message, "status": status}}


@pytest.fixture
def gemini_server(http_server):
    # The backend calls v1beta; the tests do not depend on the API version.
    http_server.rewrite = lambda path: path.replace("/v1beta/", "/v1/")
    return http_server


@pytest.fixture
def client_for(make_client):
    def _make(url: str, *, key: str | None = "test-key", model: str | None = None, timeout: float | None = None,
              retries: int = 2) -> LLMClient:
        return make_client("gemini", env={"KBINDEX_GEMINI_BASE_URL": url, "GEMINI_API_KEY": key}, model=model,
                           timeout=timeout, retries=retries)

    return _make


def ask(client: LLMClient):
    return client.structured("unit_test", [{"role": "system", "content": "Be brief."},
                                           {"role": "user", "content": "Is water wet?"}], SCHEMA, max_tokens=16)


def test_request_shape(gemini_server, client_for):
    gemini_server.expect(GENERATE, Reply(body=gemini_reply('{"ok": true}')))
    result = ask(client_for(gemini_server.url))
    assert result.data == {"ok": True} and result.usage == {"prompt_tokens": 11, "completion_tokens": 3}
    (req,) = gemini_server.posts(GENERATE)
    assert req.headers["x-goog-api-key"] == "test-key"
    body = req.json
    assert body["contents"] == [{"role": "user", "parts": [{"text": "Is water wet?"}]}]
    assert body["systemInstruction"]["parts"][0]["text"].startswith("Be brief.")
    gen = body["generationConfig"]
    assert gen["responseMimeType"] == "application/json" and gen["responseJsonSchema"] == SCHEMA
    assert gen["maxOutputTokens"] == 16 and gen["temperature"] == 0.0
    thinking = gen["thinkingConfig"]
    assert thinking.get("thinkingBudget", thinking.get("thinking_budget")) == 0  # no thinking for judgements


def test_default_model_is_stable():
    assert resolve(LLMOptions(backend="gemini")).model == "gemini-2.5-flash"


def test_key_from_google_api_key(monkeypatch):
    monkeypatch.setenv("GOOGLE_API_KEY", "g-key")
    config = resolve(LLMOptions(backend="gemini"))
    assert config.api_key == "g-key" and config.sources["api_key"].startswith("GOOGLE_API_KEY")


def test_missing_key_is_a_config_error(monkeypatch):
    client = LLMClient(resolve(LLMOptions(backend="gemini")))
    with pytest.raises(LLMConfigError, match="GEMINI_API_KEY"):
        ask(client)


@pytest.mark.parametrize("status, body, error", [
    (400, api_error(400, "API key not valid. Please pass a valid API key.", "INVALID_ARGUMENT"), LLMAuthError),
    (403, api_error(403, "Permission denied", "PERMISSION_DENIED"), LLMAuthError),
    (404, api_error(404, "models/gemini-9 is not found", "NOT_FOUND"), LLMModelNotFound),
])
def test_client_errors(gemini_server, client_for, status, body, error):
    gemini_server.expect(GENERATE, Reply(status, body))
    with pytest.raises(error):
        ask(client_for(gemini_server.url))
    assert len(gemini_server.posts(GENERATE)) == 1


def test_429_then_success(gemini_server, client_for):
    gemini_server.expect(GENERATE, Reply(429, api_error(429, "Resource exhausted", "RESOURCE_EXHAUSTED")),
                         Reply(body=gemini_reply('{"ok": false}')))
    result = ask(client_for(gemini_server.url))
    assert result.data == {"ok": False} and result.attempts == 2


def test_500_retried_then_raised(gemini_server, client_for):
    gemini_server.expect(GENERATE, *[Reply(500, api_error(500, "internal", "INTERNAL"))] * 3)
    with pytest.raises(LLMServerError):
        ask(client_for(gemini_server.url))
    assert len(gemini_server.posts(GENERATE)) == 3


def test_timeout(gemini_server, client_for):
    gemini_server.expect(GENERATE, Reply(body=gemini_reply('{"ok": true}'), delay=2.0))
    with pytest.raises(LLMTimeout):
        ask(client_for(gemini_server.url, timeout=0.5))


def test_connection_refused(closed_port, client_for):
    with pytest.raises(LLMUnavailable, match=str(closed_port)):
        ask(client_for(f"http://127.0.0.1:{closed_port}", retries=0))


def test_invalid_json_is_repaired(gemini_server, client_for):
    gemini_server.expect(GENERATE, Reply(body=gemini_reply("yes")), Reply(body=gemini_reply('{"ok": true}')))
    result = ask(client_for(gemini_server.url))
    assert result.repaired and result.data == {"ok": True}
    contents = gemini_server.posts(GENERATE)[1].json["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]


def test_runaway_output(gemini_server, client_for):
    runaway = '{"ok": ' + "true, " * 3000
    gemini_server.expect(GENERATE, *[Reply(body=gemini_reply(runaway, finish="MAX_TOKENS"))] * 2)
    with pytest.raises(LLMBadResponse, match="cut off"):
        ask(client_for(gemini_server.url))


def test_chat_with_tools_and_streaming(gemini_server, client_for):
    call = {"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": "search", "args": {"q": "rl"}}}]}, "finishReason": "STOP"}]}
    gemini_server.expect(GENERATE, Reply(body=call))
    pieces = [gemini_reply("Hel", finish=None), gemini_reply("lo")]
    for p in pieces:
        if p["candidates"][0]["finishReason"] is None:
            del p["candidates"][0]["finishReason"]
    gemini_server.expect(STREAM, Reply(chunks=[f"data: {json.dumps(p)}\r\n\r\n" for p in pieces]))
    client = client_for(gemini_server.url)
    tool = Tool("search", "Search the KB", {"type": "object", "properties": {"q": {"type": "string"}}})
    out = client.chat([Message("user", "find rl")], tools=[tool], max_tokens=30)
    assert out.tool_calls[0].name == "search" and out.tool_calls[0].arguments == {"q": "rl"}
    decl = gemini_server.posts(GENERATE)[0].json["tools"][0]["functionDeclarations"][0]
    params = decl.get("parametersJsonSchema", decl.get("parameters_json_schema"))  # the SDK sends either form
    assert decl["name"] == "search" and params["properties"] == {"q": {"type": "string"}}
    chunks = list(client.stream_chat([Message("user", "hi")]))
    assert "".join(c.text for c in chunks) == "Hello" and chunks[-1].finish_reason == "STOP"


def test_probe(gemini_server, client_for, closed_port):
    gemini_server.expect("/v1/models/gemini-2.5-flash", Reply(body={"name": "models/gemini-2.5-flash"}))
    probe = client_for(gemini_server.url).backend.probe(2.0)
    assert probe.reachable and probe.model_available and probe.models == ["gemini-2.5-flash"]
    gemini_server.expect("/v1/models/gemini-9", Reply(404, api_error(404, "not found", "NOT_FOUND")))
    missing = client_for(gemini_server.url, model="gemini-9").backend.probe(2.0)
    assert missing.reachable and missing.model_available is False
    down = client_for(f"http://127.0.0.1:{closed_port}").backend.probe(1.0)
    assert not down.reachable and str(closed_port) in down.url
