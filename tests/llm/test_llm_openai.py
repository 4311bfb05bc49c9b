"""The openai backend at the HTTP level, against a scripted server on 127.0.0.1."""

from __future__ import annotations

import json

import pytest
from llm_helpers import Reply, openai_models, openai_reply

from kb_indexer.llm.base import (LLMAuthError, LLMBadResponse, LLMModelNotFound, LLMServerError, LLMTimeout,
                                 LLMUnavailable, Message, Tool)
from kb_indexer.llm.config import LLMOptions, resolve
from kb_indexer.llm.structured import LLMClient

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 50}}, "required": ["answer"],
          "additionalProperties": False}
PATH = "/v1/chat/completions"


@pytest.fixture
def client_for(make_client):
    def _make(url: str, *, model: str | None = "test-model", key: str | None = None, timeout: float | None = None,
              retries: int = 2, conn=None) -> LLMClient:
        return make_client("openai", env={"KBINDEX_OPENAI_BASE_URL": url, "OPENAI_API_KEY": key}, model=model,
                           timeout=timeout, retries=retries, conn=conn)

    return _make


def ask(client: LLMClient, **kw):
    return client.structured("unit_test", [{"role": "user", "content": "Say hi."}], SCHEMA, max_tokens=64, **kw)


def test_request_shape(http_server, client_for):
    http_server.expect(PATH, Reply(body=openai_reply('{"answer": "hi"}')))
    client = client_for(http_server.url + "/v1", key="sk-test")
    result = ask(client)
    assert result.data == {"answer": "hi"} and result.usage["completion_tokens"] == 5
    (req,) = http_server.posts(PATH)
    assert req.headers["authorization"] == "Bearer sk-test"
    body = req.json
    assert body["model"] == "test-model" and body["temperature"] == 0.0 and body["max_tokens"] == 64
    assert body["stream"] is False
    assert body["response_format"] == {"type": "json_schema",
                                       "json_schema": {"name": "unit_test", "schema": SCHEMA, "strict": True}}
    assert [m["role"] for m in body["messages"]] == ["system", "user"]


def test_adapts_to_a_server_without_json_schema(http_server, client_for):
    # llama-cpp-python answers 500 with a validation error naming response_format; OpenAI-like
    # servers answer 400. The backend falls through to json_object + schema, then plain json_object.
    rejection = {"error": {"message": "Input should be 'text' or 'json_object' (response_format.type)"}}
    http_server.expect(PATH, Reply(500, rejection), Reply(400, {"error": {"message": "unknown field schema in "
                                                                                     "response_format"}}),
                       Reply(body=openai_reply('{"answer": "ok"}')), Reply(body=openai_reply('{"answer": "again"}')))
    client = client_for(http_server.url + "/v1")
    assert ask(client).data == {"answer": "ok"}
    formats = [r.json.get("response_format") for r in http_server.posts(PATH)]
    assert formats == [{"type": "json_schema", "json_schema": {"name": "unit_test", "schema": SCHEMA, "strict": True}},
                       {"type": "json_object", "schema": SCHEMA}, {"type": "json_object"}]
    prompts = [r.json["messages"][0]["content"] for r in http_server.posts(PATH)]
    schema_text = json.dumps(SCHEMA, separators=(",", ":"))
    assert schema_text not in prompts[0] and schema_text not in prompts[1]  # sent as a parameter
    assert schema_text in prompts[2]  # plain json_object: the schema goes in the prompt
    # the accepted mode is remembered for this server
    ask(client, use_cache=False)
    assert http_server.posts(PATH)[-1].json["response_format"] == {"type": "json_object"}


def test_model_defaults_to_the_servers_first(http_server, client_for):
    http_server.expect("/v1/models", Reply(body=openai_models("local.gguf", "other")))
    http_server.expect(PATH, Reply(body=openai_reply('{"answer": "x"}')))
    client = client_for(http_server.url + "/v1", model=None)
    assert ask(client).data == {"answer": "x"}
    assert http_server.posts(PATH)[0].json["model"] == "local.gguf"
    assert client.model == "local.gguf"


@pytest.mark.parametrize("status, error", [(401, LLMAuthError), (403, LLMAuthError), (404, LLMModelNotFound)])
def test_client_errors_are_mapped_and_not_retried(http_server, client_for, status, error):
    http_server.expect(PATH, Reply(status, {"error": {"message": "nope"}}))
    with pytest.raises(error) as exc:
        ask(client_for(http_server.url + "/v1"))
    assert "nope" in exc.value.message and len(http_server.posts(PATH)) == 1


def test_429_then_success_honours_retry_after(http_server, monkeypatch):
    monkeypatch.setenv("KBINDEX_OPENAI_BASE_URL", http_server.url + "/v1")
    http_server.expect(PATH, Reply(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "2"}),
                       Reply(body=openai_reply('{"answer": "finally"}')))
    sleeps = []
    client = LLMClient(resolve(LLMOptions(backend="openai", model="m")), sleep=sleeps.append)
    result = ask(client)
    assert result.data == {"answer": "finally"} and result.attempts == 2 and sleeps[0] >= 2.0


def test_500_is_retried_then_raised(http_server, client_for):
    http_server.expect(PATH, *[Reply(500, {"error": {"message": "overloaded"}})] * 3)
    with pytest.raises(LLMServerError, match="overloaded"):
        ask(client_for(http_server.url + "/v1", retries=2))
    assert len(http_server.posts(PATH)) == 3


def test_timeout(http_server, client_for):
    http_server.expect(PATH, Reply(body=openai_reply('{"answer": "late"}'), delay=1.5))
    with pytest.raises(LLMTimeout, match="within 0.3s"):
        ask(client_for(http_server.url + "/v1", timeout=0.3))


def test_connection_refused_is_raised_without_retries(closed_port, client_for, capsys):
    """Nothing listens: the server is not running, and waiting for a retry would not start it."""
    with pytest.raises(LLMUnavailable, match=f"127.0.0.1:{closed_port}") as info:
        ask(client_for(f"http://127.0.0.1:{closed_port}/v1", retries=2))
    assert info.value.retryable is False
    assert "retry" not in capsys.readouterr().err


def test_dropped_connection_then_success(http_server, client_for):
    http_server.expect(PATH, Reply(drop=True), Reply(body=openai_reply('{"answer": "back"}')))
    assert ask(client_for(http_server.url + "/v1")).data == {"answer": "back"}


def test_invalid_json_is_repaired(http_server, client_for):
    http_server.expect(PATH, Reply(body=openai_reply('{"answer": ')), Reply(body=openai_reply('{"answer": "fixed"}')))
    result = ask(client_for(http_server.url + "/v1"))
    assert result.data == {"answer": "fixed"} and result.repaired
    repair_msgs = http_server.posts(PATH)[1].json["messages"]
    assert repair_msgs[-2] == {"role": "assistant", "content": '{"answer": '}
    assert "invalid JSON" in repair_msgs[-1]["content"]


def test_runaway_output_ends_in_bad_response(http_server, client_for):
    runaway = '{"answer": "' + "again " * 4000
    http_server.expect(PATH, Reply(body=openai_reply(runaway, finish="length")),
                       Reply(body=openai_reply(runaway, finish="length")))
    with pytest.raises(LLMBadResponse, match="cut off at 64 tokens"):
        ask(client_for(http_server.url + "/v1"))
    assert all(r.json["max_tokens"] == 64 for r in http_server.posts(PATH))


def test_non_json_reply_body(http_server, client_for):
    http_server.expect(PATH, Reply(body="<html>proxy error</html>", headers={"Content-Type": "text/html"}))
    with pytest.raises(LLMBadResponse, match="not JSON"):
        ask(client_for(http_server.url + "/v1"))


def test_chat_with_tools(http_server, client_for):
    call = {"id": "c1", "type": "function", "function": {"name": "search", "arguments": '{"q": "rl"}'}}
    http_server.expect(PATH, Reply(body=openai_reply("", finish="tool_calls", tool_calls=[call])))
    tool = Tool("search", "Search the KB", {"type": "object", "properties": {"q": {"type": "string"}}})
    client = client_for(http_server.url + "/v1")
    out = client.chat([Message("user", "find rl")], tools=[tool], max_tokens=50, temperature=0.2)
    assert out.tool_calls[0].name == "search" and out.tool_calls[0].arguments == {"q": "rl"}
    body = http_server.posts(PATH)[0].json
    assert body["tools"] == [tool.openai_dict()] and body["temperature"] == 0.2 and "response_format" not in body


def test_streamed_chat(http_server, client_for):
    events = [{"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
              for piece in ("Hel", "lo", " there")]
    events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    http_server.expect(PATH, Reply(chunks=[f"data: {json.dumps(e)}\n\n" for e in events] + ["data: [DONE]\n\n"]))
    chunks = list(client_for(http_server.url + "/v1").stream_chat([{"role": "user", "content": "hi"}]))
    assert "".join(c.text for c in chunks) == "Hello there" and chunks[-1].finish_reason == "stop"
    assert http_server.posts(PATH)[0].json["stream"] is True


def test_a_streamed_chat_answered_with_one_json_body_is_a_bad_response(http_server, client_for):
    """A server that ignores `stream` and answers one JSON completion: chat said nothing and exited 0."""
    from kb_indexer.llm.base import LLMBadResponse

    http_server.expect(PATH, Reply(chunks=[json.dumps({"choices": [{"message": {"content": "hi"}}]}) + "\n"],
                                   headers={"Content-Type": "application/json"}))
    with pytest.raises(LLMBadResponse, match="did not answer with an event stream"):
        list(client_for(http_server.url + "/v1").stream_chat([{"role": "user", "content": "hi"}]))


def test_streamed_chat_error_before_first_chunk_is_retried(http_server, client_for):
    http_server.expect(PATH, Reply(503, {"error": {"message": "loading model"}}),
                       Reply(chunks=['data: {"choices": [{"delta": {"content": "ok"}, "finish_reason": "stop"}]}\n\n',
                                     "data: [DONE]\n\n"]))
    chunks = list(client_for(http_server.url + "/v1").stream_chat([{"role": "user", "content": "hi"}]))
    assert chunks[0].text == "ok" and len(http_server.posts(PATH)) == 2


def test_probe(http_server, client_for, closed_port):
    http_server.expect("/v1/models", Reply(body=openai_models("a", "b")))
    probe = client_for(http_server.url + "/v1", model="b").backend.probe(2.0)
    assert probe.reachable and probe.model_available and probe.models == ["a", "b"]
    assert probe.url == http_server.url + "/v1/models"
    down = client_for(f"http://127.0.0.1:{closed_port}/v1").backend.probe(2.0)
    assert not down.reachable and down.error and str(closed_port) in down.url


def test_cache_hit_needs_no_server_when_the_server_picks_the_model(http_server, client_for, empty_kb, closed_port):
    # No --llm-model: the cache key names the server (its URL), not a model the server must be asked
    # for, so a cached answer is served while the server is down (issue 8 item 5).
    http_server.expect("/v1/models", Reply(body=openai_models("m1")))
    http_server.expect(PATH, Reply(body=openai_reply('{"answer": "from m1"}')))
    first = client_for(http_server.url + "/v1", model=None, conn=empty_kb.conn)
    assert ask(first).data == {"answer": "from m1"} and first.report(used=True)["model"] == "m1"
    assert [r[0] for r in empty_kb.conn.execute("SELECT model FROM llm_cache")] == \
        [f"server-default@{http_server.url}/v1"]
    requests_before = len(http_server.requests)
    again = client_for(http_server.url + "/v1", model=None, conn=empty_kb.conn)
    res = ask(again)
    assert res.cached and res.data == {"answer": "from m1"} and len(http_server.requests) == requests_before
    http_server.close()  # the server is down now: the hit still needs no network
    down = client_for(http_server.url + "/v1", model=None, conn=empty_kb.conn, retries=0)
    res = ask(down)
    assert res.cached and res.data == {"answer": "from m1"}
    assert down.report(used=True)["model"] is None   # never a placeholder such as server-default@...

def test_a_stream_asks_for_its_usage_and_passes_on_a_reported_cost(http_server, client_for):
    """Streamed answers carry token counts only when asked (``stream_options.include_usage``); a cost the
    server reports (OpenRouter's ``usage.cost``) is passed on, a malformed one is not."""
    events = [{"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]},
              {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13,
                                        "cost": 0.00042, "prompt_tokens_details": {"cached_tokens": 0}}}]
    http_server.expect(PATH, Reply(chunks=[f"data: {json.dumps(e)}\n\n" for e in events] + ["data: [DONE]\n\n"]))
    chunks = list(client_for(http_server.url + "/v1").stream_chat([{"role": "user", "content": "hi"}]))
    assert http_server.posts(PATH)[0].json["stream_options"] == {"include_usage": True}
    assert chunks[-1].usage == {"prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13, "cost": 0.00042}


@pytest.mark.parametrize("cost", ["0.1", -1, float("inf"), True])
def test_a_malformed_cost_is_left_out(cost):
    from kb_indexer.llm.openai_backend import reported_usage

    assert reported_usage({"prompt_tokens": 3, "cost": cost}) == {"prompt_tokens": 3}
