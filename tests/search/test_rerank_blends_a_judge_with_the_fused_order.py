"""`query --rerank`: the top results judged by the LLM (a scripted backend) or by a cross-encoder behind a
`/rerank` endpoint (a real HTTP server on 127.0.0.1), the judgement blended with the fused score, cached,
and on any failure the fused order kept and the reason said."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import pytest

from kb_indexer.errors import UsageError
from kb_indexer.llm.config import LLMOptions
from kb_indexer.search import rerank as stage

QUESTION = "how does AlphaGo choose its moves?"


@pytest.fixture
def script(tmp_path, monkeypatch):
    """Scripted answers of the fake LLM backend (``KBINDEX_FAKE_LLM``), and the requests it got."""
    path = tmp_path / "llm-script.json"
    monkeypatch.setenv("KBINDEX_FAKE_LLM", str(path))
    monkeypatch.delenv("KBINDEX_RERANK", raising=False)

    def _set(*steps: dict[str, Any]) -> Callable[[], list[dict[str, Any]]]:
        path.write_text(json.dumps(list(steps)), encoding="utf-8")
        calls = path.with_name(path.name + ".calls.jsonl")
        calls.unlink(missing_ok=True)
        return lambda: [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []

    return _set


def _fused(kb) -> list[str]:
    return [r["filepath"] for r in kb.query(QUESTION)["results"]]


def _judge_last_best(n: int) -> dict[str, int]:
    return {str(i + 1): (10 if i == n - 1 else 0) for i in range(n)}


def test_the_llm_judgement_is_blended_not_substituted_and_cached(kb, script):
    before = _fused(kb)
    top = min(stage.TOP_K, len(before))
    calls = script({"json": _judge_last_best(top)})
    out = kb.query(QUESTION, llm=LLMOptions(backend="fake"), rerank="llm")
    assert len(calls()) == 1                                    # one call for the whole top-k
    report = out["rerank"]
    assert report["used"] is True and report["stage"] == "llm_rerank" and report["fallback"] is None
    order = [r["filepath"] for r in out["results"]]
    assert order[0] == before[top - 1]                          # the judged best moves up ...
    assert sorted(order[:top]) == sorted(before[:top]) and order[top:] == before[top:]   # ... within the top-k
    best = max(r["fused_score"] for r in out["results"][:top])
    for r in out["results"][:top]:
        assert r["ranked_by"] == "fused+llm_rerank"
        blended = (1 - stage.WEIGHT) * r["fused_score"] / best + stage.WEIGHT * r["rerank_score"]
        assert r["relevance_score"] == pytest.approx(blended, abs=1e-4)
    assert all(r["ranked_by"] == "fused" for r in out["results"][top:])
    again = script()                                            # nothing scripted: only the cache can answer
    cached = kb.query(QUESTION, llm=LLMOptions(backend="fake"), rerank="llm")
    assert again() == [] and cached["rerank"]["cached"] is True
    assert [r["filepath"] for r in cached["results"]] == order


def test_a_judge_with_no_preference_keeps_the_fused_order(kb, script):
    before = _fused(kb)
    top = min(stage.TOP_K, len(before))
    script({"json": {str(i + 1): 5 for i in range(top)}})
    out = kb.query(QUESTION, llm=LLMOptions(backend="fake"), rerank="llm")
    assert out["rerank"]["used"] is True and [r["filepath"] for r in out["results"]] == before


def test_an_llm_failure_keeps_the_fused_order_and_says_why(kb, script):
    before = _fused(kb)
    script({"error": "timeout", "message": "too slow"}, {"error": "timeout", "message": "too slow"})
    out = kb.query(QUESTION, llm=LLMOptions(backend="fake"), rerank="llm")
    report = out["rerank"]
    assert report["used"] is False and report["fallback"] == "fused order" and "too slow" in report["error"]
    assert [r["filepath"] for r in out["results"]] == before


def test_without_an_llm_the_llm_stage_says_so(kb, script):
    out = kb.query(QUESTION, llm=LLMOptions(backend="none"), rerank="llm")
    assert out["rerank"]["used"] is False and "no LLM backend" in out["rerank"]["error"]


class _Rerank(BaseHTTPRequestHandler):
    """A cross-encoder's /v1/rerank: scores each document by how often it says 'tree' (or fails)."""

    bodies: list[dict[str, Any]] = []
    status = 200

    def log_message(self, *args: Any) -> None:
        pass

    trickle = False
    bad_score: float | None = None   # sent for the first document (NaN, inf: what json.dumps writes for them)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).bodies.append({"path": self.path, **body})
        if type(self).trickle:   # headers, then one byte a quarter second, never the end
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            try:
                for _ in range(400):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.25)
            except OSError:
                pass
            return
        results = [{"index": i, "relevance_score": doc.lower().count("tree") - 3.0}
                   for i, doc in enumerate(body["documents"])]
        if type(self).bad_score is not None:
            results[0]["relevance_score"] = type(self).bad_score
        payload = json.dumps({"results": sorted(results, key=lambda r: -r["relevance_score"])}).encode()
        self.send_response(type(self).status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def endpoint(monkeypatch):
    _Rerank.bodies, _Rerank.status, _Rerank.trickle, _Rerank.bad_score = [], 200, False, None
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Rerank)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("KBINDEX_RERANK_MODEL", "bge-reranker-test")
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_a_cross_encoder_endpoint_reranks_the_top_k(kb, endpoint):
    before = _fused(kb)
    top = min(stage.TOP_K, len(before))
    out = kb.query(QUESTION, rerank=endpoint)
    sent = _Rerank.bodies[0]
    assert sent["path"] == "/v1/rerank" and sent["model"] == "bge-reranker-test" and sent["query"] == QUESTION
    assert sent["top_n"] == top == len(sent["documents"])
    report = out["rerank"]
    assert report["used"] is True and report["stage"] == "cross_encoder" and report["cached"] is False
    hits = out["results"][:top]
    assert all(r["ranked_by"] == "fused+cross_encoder" and 0 <= r["rerank_score"] <= 1 for r in hits)
    assert [r["relevance_score"] for r in hits] == sorted((r["relevance_score"] for r in hits), reverse=True)
    assert kb.query(QUESTION, rerank=endpoint)["rerank"]["cached"] is True and len(_Rerank.bodies) == 1


def test_a_failing_endpoint_keeps_the_fused_order(kb, endpoint):
    _Rerank.status = 500
    before = _fused(kb)
    out = kb.query(QUESTION, rerank=endpoint + "/rerank")
    assert out["rerank"]["used"] is False and out["rerank"]["fallback"] == "fused order"
    assert "500" in out["rerank"]["error"] and [r["filepath"] for r in out["results"]] == before


def test_the_setting_names_a_stage_or_is_bad_usage(monkeypatch):
    monkeypatch.delenv("KBINDEX_RERANK", raising=False)
    assert stage.resolve(None) is None and stage.resolve("off") is None
    monkeypatch.setenv("KBINDEX_RERANK", "llm")
    assert stage.resolve(None) == stage.RerankSpec("llm")
    assert stage.resolve("off") is None                       # the flag wins over the environment
    assert stage.resolve("https://h:8080/v1/rerank").url == "https://h:8080/v1/rerank"
    with pytest.raises(UsageError, match="--rerank takes"):
        stage.resolve("cohere")


def test_cli_query_rerank_llm(project, run, tmp_path):
    steps = tmp_path / "cli-script.json"
    run("init", cwd=project)
    run("sync", cwd=project)
    plain = run("query", QUESTION, "-f", "json", "--no-stale-check", cwd=project).json()
    top = min(stage.TOP_K, len(plain["results"]))
    steps.write_text(json.dumps([{"json": _judge_last_best(top)}]))
    res = run("query", QUESTION, "-f", "json", "--no-stale-check", "--rerank", "llm", "--llm-backend", "fake",
              cwd=project, env={"KBINDEX_FAKE_LLM": str(steps)})
    assert res.returncode == 0, res.stderr
    data = res.json()
    assert data["rerank"]["used"] is True
    assert data["results"][0]["filepath"] == plain["results"][top - 1]["filepath"]
    bad = run("query", QUESTION, "--rerank", "sometimes", cwd=project)
    assert bad.returncode == 2 and "--rerank takes" in bad.stderr


def test_a_trickling_endpoint_is_cut_at_the_deadline(kb, endpoint, monkeypatch):
    """The deadline is for the whole call: an endpoint that sends a byte now and then never holds the query."""
    monkeypatch.setattr(stage, "TIMEOUT", 2.0)
    _Rerank.trickle = True
    before = _fused(kb)
    started = time.monotonic()
    out = kb.query(QUESTION, rerank=endpoint)
    assert time.monotonic() - started < 30          # not the 100 s the endpoint would trickle for
    assert out["rerank"]["used"] is False and out["rerank"]["fallback"] == "fused order"
    assert [r["filepath"] for r in out["results"]] == before


def test_the_history_records_the_reranked_order_the_user_saw(kb, script):
    from kb_indexer.learn.history import get_attempt

    before = _fused(kb)
    top = min(stage.TOP_K, len(before))
    script({"json": _judge_last_best(top)})
    out = kb.query(QUESTION, llm=LLMOptions(backend="fake"), rerank="llm")
    shown = [r["filepath"] for r in out["results"]]
    assert out["rerank"]["used"] is True and shown != before
    attempt = get_attempt(kb.conn, out["attempt_id"])
    assert attempt is not None
    recorded = [r["filepath"] for r in attempt["top_results"]]
    assert recorded == shown[:len(recorded)]
    assert attempt["top_results"][0]["score"] == out["results"][0]["relevance_score"]


@pytest.mark.parametrize("bad", [float("nan"), float("inf")], ids=["NaN", "Infinity"])
def test_a_score_that_is_not_a_finite_number_is_a_bad_answer(kb, endpoint, bad):
    """NaN or Infinity from the endpoint reached the results, so the JSON on stdout was not JSON, and the
    history kept it."""
    _Rerank.bad_score = bad
    before = _fused(kb)
    out = kb.query(QUESTION, rerank=endpoint)
    assert out["rerank"]["used"] is False and "not a finite number" in out["rerank"]["error"]
    assert [r["filepath"] for r in out["results"]] == before
    json.dumps(out, allow_nan=False)
