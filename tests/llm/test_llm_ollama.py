"""The ollama backend (official client) at the HTTP level, against a scripted server on 127.0.0.1."""

from __future__ import annotations

import json

import pytest
from llm_helpers import Reply, ollama_reply

from kb_indexer.llm.base import (LLMAuthError, LLMBadResponse, LLMModelNotFound, LLMServerError, LLMTimeout,
                                 LLMUnavailable, Message, Tool)
from kb_indexer.llm.config import ollama_host
from kb_indexer.llm.structured import LLMClient

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer", "enum": [1, 2, 3]}}, "required": ["n"],
          "additionalProperties": False}
PATH = "/api/chat"


@pytest.fixture
def client_for(make_client):
    def _make(host: str, *, model: str | None = None, timeout: float | None = None, retries: int = 2) -> LLMClient:
        return make_client("ollama", env={"OLLAMA_HOST": host}, model=model, timeout=timeout, retries=retries)

    return _make


def ask(client: LLMClient):
    return client.structured("unit_test", [{"role": "user", "content": "Pick 2."}], SCHEMA, max_tokens=32)


def test_request_shape(http_server, client_for):
    http_server.expect(PATH, Reply(body=ollama_reply('{"n": 2}')))
    client = client_for(http_server.url)
    result = ask(client)
    assert result.data == {"n": 2} and result.model == "llama3.2:3b"
    (req,) = http_server.posts(PATH)
    body = req.json
    assert body["model"] == "llama3.2:3b" and body["stream"] is False
    assert body["format"] == SCHEMA
    assert body["options"] == {"temperature": 0.0, "num_predict": 32}
    assert body["messages"][0]["role"] == "system" and "JSON schema" in body["messages"][0]["content"]
    assert body["messages"][1] == {"role": "user", "content": "Pick 2."}


@pytest.mark.parametrize("raw, expected", [
    (None, "http://127.0.0.1:11434"), ("localhost", "http://localhost:11434"),
    ("0.0.0.0:9999", "http://127.0.0.1:9999"), ("https://ollama.example", "https://ollama.example:443"),
    ("http://10.0.0.2:1234/", "http://10.0.0.2:1234"),
])
def test_ollama_host_forms(raw, expected):
    assert ollama_host(raw) == expected


def test_model_not_found(http_server, client_for):
    http_server.expect(PATH, Reply(404, {"error": "model 'nope' not found, try pulling it first"}))
    with pytest.raises(LLMModelNotFound, match="model 'nope' not found"):
        ask(client_for(http_server.url, model="nope"))
    assert len(http_server.posts(PATH)) == 1


def test_unauthorised(http_server, client_for):
    http_server.expect(PATH, Reply(401, {"error": "unauthorized"}))
    with pytest.raises(LLMAuthError):
        ask(client_for(http_server.url))


def test_429_then_success(http_server, client_for):
    http_server.expect(PATH, Reply(429, {"error": "busy"}), Reply(body=ollama_reply('{"n": 1}')))
    result = ask(client_for(http_server.url))
    assert result.data == {"n": 1} and result.attempts == 2


def test_500_retried_then_raised(http_server, client_for):
    http_server.expect(PATH, *[Reply(500, {"error": "llama runner process has terminated"})] * 2)
    with pytest.raises(LLMServerError, match="runner process"):
        ask(client_for(http_server.url, retries=1))
    assert len(http_server.posts(PATH)) == 2


def test_timeout(http_server, client_for):
    http_server.expect(PATH, Reply(body=ollama_reply('{"n": 1}'), delay=1.5))
    with pytest.raises(LLMTimeout):
        ask(client_for(http_server.url, timeout=0.3))


def test_connection_refused_is_raised_without_retries(closed_port, client_for, capsys):
    with pytest.raises(LLMUnavailable, match=f"127.0.0.1:{closed_port}") as info:
        ask(client_for(f"127.0.0.1:{closed_port}", retries=2))
    assert info.value.retryable is False
    assert "retry" not in capsys.readouterr().err


def test_invalid_json_then_out_of_enum_gives_bad_response(http_server, client_for):
    http_server.expect(PATH, Reply(body=ollama_reply("n is 2")), Reply(body=ollama_reply('{"n": 7}')))
    with pytest.raises(LLMBadResponse, match="not one of"):
        ask(client_for(http_server.url))


def test_runaway_output(http_server, client_for):
    runaway = '{"n": [' + "1, " * 5000
    http_server.expect(PATH, *[Reply(body=ollama_reply(runaway, done_reason="length"))] * 2)
    with pytest.raises(LLMBadResponse, match="cut off at 32 tokens"):
        ask(client_for(http_server.url))


def test_chat_with_tools_and_streaming(http_server, client_for):
    tool_reply = ollama_reply("")
    tool_reply["message"]["tool_calls"] = [{"function": {"name": "search", "arguments": {"q": "rl"}}}]
    lines = [{"model": "m", "created_at": "2025-01-01T00:00:00Z", "message": {"role": "assistant", "content": p},
              "done": False} for p in ("Hi", " you")]
    lines.append({**ollama_reply(""), "done": True})
    http_server.expect(PATH, Reply(body=tool_reply),
                       Reply(chunks=[json.dumps(x) + "\n" for x in lines],
                             headers={"Content-Type": "application/x-ndjson"}))
    client = client_for(http_server.url)
    tool = Tool("search", "Search", {"type": "object", "properties": {"q": {"type": "string"}}})
    out = client.chat([Message("user", "find")], tools=[tool], max_tokens=20)
    assert out.tool_calls[0].name == "search" and out.tool_calls[0].arguments == {"q": "rl"}
    first = http_server.posts(PATH)[0].json
    assert first["tools"][0]["function"]["name"] == "search" and first["options"]["num_predict"] == 20
    chunks = list(client.stream_chat([Message("user", "hi")]))
    assert "".join(c.text for c in chunks) == "Hi you" and chunks[-1].finish_reason == "stop"
    assert http_server.posts(PATH)[1].json["stream"] is True


def test_probe(http_server, client_for, closed_port):
    http_server.expect("/api/tags", Reply(body={"models": [{"model": "llama3.2:3b", "name": "llama3.2:3b"},
                                                           {"model": "qwen2.5:0.5b", "name": "qwen2.5:0.5b"}]}))
    probe = client_for(http_server.url).backend.probe(2.0)
    assert probe.reachable and probe.model_available and probe.url == http_server.url + "/api/tags"
    down = client_for(f"127.0.0.1:{closed_port}").backend.probe(1.0)
    assert not down.reachable and f"127.0.0.1:{closed_port}" in down.url
