"""`kbindex context add|build|show|reset|sessions|compress` on the command line, through the installed
command (a real process running this checkout's code) and in-process with CliRunner: JSON output, JSON
errors with their exit codes, and input from stdin."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from context_helpers import conversation
from kb_indexer.context.compress import total_tokens
from tests.conftest import REPO, kbindex_exe


class Out:
    def __init__(self, code: int, stdout: str, stderr: str):
        self.code, self.stdout, self.stderr = code, stdout, stderr

    def json(self):
        return json.loads(self.stdout)

    def error(self):
        return json.loads(self.stderr)["error"]


@pytest.fixture(params=["process", "runner"])
def kbx(request, run, cli, empty_kb):
    """``kbx(*args, input=None)`` against one index, by the installed command or by CliRunner."""
    db = empty_kb.db_path

    def _kbx(*args, input: str | None = None) -> Out:
        full = [*args, "--db", db]
        if request.param == "process":
            res = run(*full, input=input, env={"PYTHONPATH": str(REPO)})
            return Out(res.returncode, res.stdout, res.stderr)
        res = cli(*full, input=input)
        return Out(res.exit_code, res.stdout, res.stderr)

    return _kbx


def test_the_installed_command_runs_this_checkout(run, empty_kb):
    # PYTHONPATH puts this checkout before the installed package: its normalisation is the one used
    res = run("context", "add", "-s", "n", "-r", "user", "grep for `please` in the code", "--db", empty_kb.db_path,
              "-f", "json", env={"PYTHONPATH": str(REPO)})
    assert res.returncode == 0, res.stderr
    assert res.json()["added"][0]["normalised"] == "grep for `please` in the code"


def test_a_conversation_end_to_end(kbx):
    res = kbx("context", "add", "--session", "s1", "--role", "user", "open workspace Research", "--format", "json")
    assert res.code == 0, res.stderr
    assert res.json()["added"] == [{"seq": 1, "role": "user", "is_question": False,
                                    "normalised": "open workspace Research"}]
    res = kbx("context", "add", "-s", "s1", "-r", "assistant", "Do you want to open Workspace 5?", "-f", "json")
    assert res.json()["added"][0]["is_question"] is True
    res = kbx("context", "build", "-s", "s1", "how about workspace workspace 5", "--record", "-f", "json")
    assert res.code == 0, res.stderr
    out = res.json()
    assert out["message"] == {"original": "how about workspace workspace 5", "normalised": "workspace 5"}
    assert out["recent_user_messages"] == ["open workspace Research"]
    assert out["last_assistant_question"] == "Do you want to open Workspace 5?"
    assert out["prompt"].endswith("Current user message: workspace 5") and out["recorded"]["seq"] == 3
    # the table form of build is the prompt block itself
    res = kbx("context", "build", "-s", "s1", "open it")
    assert res.code == 0 and res.stdout.startswith("Context:\n- Summary:")
    assert "  2) how about workspace workspace 5" in res.stdout
    assert res.stdout.rstrip("\n").endswith("Current user message: open it")
    # show, sessions, reset
    shown = kbx("context", "show", "-s", "s1", "-f", "json").json()
    assert shown["count"] == 3 and [m["seq"] for m in shown["messages"]] == [1, 2, 3]
    table = kbx("context", "show", "-s", "s1")
    assert table.code == 0 and "Do you want to open Workspace 5?" in table.stdout
    sessions = kbx("context", "sessions", "-f", "json").json()
    assert sessions["count"] == 1 and sessions["sessions"][0]["session"] == "s1"
    assert sessions["sessions"][0]["messages"] == 3 and sessions["sessions"][0]["user_messages"] == 2
    res = kbx("context", "reset", "-s", "s1", "-f", "json")
    assert res.json() == {"action": "reset", "session": "s1", "existed": True, "messages_removed": 3}
    assert kbx("context", "sessions", "-f", "json").json() == {"sessions": [], "count": 0}


def test_add_a_list_from_stdin(kbx):
    messages = [{"role": "user", "content": "can you please open the the logs"},
                {"role": "assistant", "content": "Which service?"}]
    res = kbx("context", "add", "-s", "in", "--input", "-", "-f", "json", input=json.dumps(messages))
    assert res.code == 0, res.stderr
    out = res.json()
    assert out["messages"] == 2
    assert out["added"] == [{"seq": 1, "role": "user", "is_question": False, "normalised": "open the logs"},
                            {"seq": 2, "role": "assistant", "is_question": True, "normalised": None}]


def test_compress_from_stdin(kbx):
    messages = conversation(10)
    window = total_tokens(messages, []) * 100 // 85
    res = kbx("context", "compress", "--window", str(window), "--input", "-", "--no-llm",
              input=json.dumps({"messages": messages, "skills": [{"name": "x", "content": "Do x.",
                                                                   "priority": "relevant"}]}))
    assert res.code == 0, res.stderr
    out = res.json()                              # JSON is compress's default format
    assert set(out) >= {"messages", "skills", "stats"}
    stats = out["stats"]
    assert stats["level"] == 80 and stats["tokens_after"] < stats["tokens_before"]
    assert out["messages"][0] == messages[0] and out["messages"][-1] == messages[-1]
    assert out["messages"][1]["content"].startswith("[Summary of the earlier conversation")
    assert "warning" not in res.stderr            # --no-llm is not a failure


def test_compress_cuts_a_huge_latest_message_to_the_window_and_says_so(kbx):
    messages = conversation(10)
    messages[-1] = {"role": "user", "content": "My log: " + "step done. " * 90_000 + "Why did it stop?"}
    res = kbx("context", "compress", "--window", "4096", "--input", "-", "--no-llm",
              input=json.dumps({"messages": messages}))
    assert res.code == 0, res.stderr
    out = res.json()
    stats = out["stats"]
    assert stats["tokens_after"] <= 4096 and not stats["over_window"]
    assert stats["cut_messages"] == [len(out["messages"]) - 1]
    assert total_tokens(out["messages"], []) == stats["tokens_after"]
    assert out["messages"][-1]["content"].endswith("Why did it stop?")
    assert "1 message(s) and 0 skill(s) cut to fit the window of 4096" in res.stderr


def test_compress_a_session(kbx):
    messages = conversation(10)
    body = [m for m in messages if m["role"] != "system"]
    assert kbx("context", "add", "-s", "conv", "-i", "-", input=json.dumps(body)).code == 0
    window = total_tokens(messages, []) * 100 // 85
    res = kbx("context", "compress", "--session", "conv", "--window", str(window), "--keep-last", "2", "--no-llm")
    assert res.code == 0, res.stderr
    out = res.json()
    assert out["stats"]["level"] == 80
    assert out["messages"][-1]["content"] == body[-1]["content"]
    assert out["messages"][0]["content"].startswith("[Summary of the earlier conversation")
    assert all(set(m) == {"role", "content"} for m in out["messages"])     # ready for a chat API


def test_compress_table_format_prints_the_stats(kbx):
    messages = conversation(3)
    res = kbx("context", "compress", "-i", "-", "-w", "100000", "--no-llm", "-f", "table",
              input=json.dumps(messages))
    assert res.code == 0 and "tokens_before" in res.stdout and "level" in res.stdout


def test_window_from_the_environment(empty_kb, run):
    messages = conversation(10)
    window = total_tokens(messages, []) * 100 // 92
    res = run("context", "compress", "-i", "-", "--no-llm", "--db", empty_kb.db_path, input=json.dumps(messages),
              env={"PYTHONPATH": str(REPO), "KBINDEX_CONTEXT_WINDOW": str(window)})
    assert res.returncode == 0, res.stderr
    stats = res.json()["stats"]
    assert stats["window"] == window and stats["window_source"] == "KBINDEX_CONTEXT_WINDOW" and stats["level"] == 90


# -- errors ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args,stdin,code,error", [
    (("context", "add", "-s", "e", "-i", "-"), "{not json", 1, "invalid_input"),
    (("context", "add", "-s", "e", "-i", "-"), '[{"role": "bot", "content": "hi"}]', 1, "invalid_input"),
    (("context", "add", "-s", "e", "-i", "-"), '[{"role": "user"}]', 1, "invalid_input"),
    (("context", "add", "-s", "e", "-i", "-"), "[]", 1, "invalid_input"),
    (("context", "compress", "-i", "-", "-w", "1000"), '{"messages": "nope"}', 1, "invalid_input"),
    (("context", "compress", "-i", "-", "-w", "1000"), '{"messages": []}', 1, "invalid_input"),
    (("context", "compress", "-i", "-", "-w", "1000"),
     '{"messages": [{"role": "user", "content": "x"}], "skills": [{"name": "s", "priority": "urgent"}]}',
     1, "invalid_input"),
    (("context", "show", "-s", "nobody"), None, 1, "not_found"),
    (("context", "compress", "-s", "nobody", "-w", "1000"), None, 1, "not_found"),
    (("context", "compress",), None, 2, "usage"),
    (("context", "add", "-s", "e", "hello"), None, 2, "usage"),
    (("context", "add", "-s", "e", "--role", "bot", "hello"), None, 2, "usage"),
    (("context", "add", "-s", "e"), None, 2, "usage"),
    (("context", "add", "-s", "e", "-r", "user", "hi", "-i", "-"), "[]", 2, "usage"),
    (("context", "compress", "-i", "-", "-w", "10"), '[{"role": "user", "content": "x"}]', 2, "usage"),
    (("context", "build", "-s", "e", "hi", "--recent", "-1"), None, 2, "usage"),
])
def test_errors_are_json_with_their_exit_code(kbx, args, stdin, code, error):
    res = kbx(*args, "--format", "json", input=stdin)
    assert res.code == code, (res.stdout, res.stderr)
    assert res.stdout == ""
    err = res.error()
    assert err["code"] == error and err["message"]


def test_a_failed_add_writes_nothing(kbx):
    kbx("context", "add", "-s", "e", "-r", "user", "first")
    bad = json.dumps([{"role": "user", "content": "fine"}, {"role": "bot", "content": "not fine"}])
    assert kbx("context", "add", "-s", "e", "-i", "-", "-f", "json", input=bad).code == 1
    assert kbx("context", "show", "-s", "e", "-f", "json").json()["count"] == 1


def test_an_input_file_that_does_not_exist(kbx, tmp_path):
    res = kbx("context", "add", "-s", "e", "-i", str(tmp_path / "missing.json"), "-f", "json")
    assert res.code == 1 and res.error()["code"] == "not_found" and "missing.json" in res.error()["message"]


def test_build_warns_when_the_llm_fails_for_the_rolling_summary(empty_kb, run, tmp_path):
    msgs = []
    for i in range(10):
        msgs += [{"role": "user", "content": f"We decided to use batch size {i * 16} for E{i}."},
                 {"role": "assistant", "content": "Noted."}]
    empty_kb.context.add("w", msgs)
    script = tmp_path / "answers.json"
    script.write_text(json.dumps([{"error": "timeout", "message": "summariser asleep"}]), encoding="utf-8")
    res = run("context", "build", "-s", "w", "next", "--llm-backend", "fake", "-f", "json", "--db",
              empty_kb.db_path, env={"PYTHONPATH": str(REPO), "KBINDEX_FAKE_LLM": str(script),
                                     "KBINDEX_LLM_RETRIES": "0"})
    assert res.returncode == 0, res.stderr
    out = res.json()
    assert out["summary"]["source"] == "extractive" and "batch size 0" in out["summary"]["text"]
    assert "warning" in res.stderr and "summariser asleep" in res.stderr


# -- two processes through the command -------------------------------------------------------------------

def test_two_command_loops_adding_to_one_session_lose_nothing(empty_kb, tmp_path):
    exe = " ".join(f"'{p}'" for p in kbindex_exe())
    db = empty_kb.db_path
    loop = ("for i in $(seq 1 12); do {exe} context add -s shared -r user \"{who}-$i\" --db '{db}' >/dev/null "
            "|| exit 1; done")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen(["bash", "-c", loop.format(exe=exe, who=who, db=db)], env=env,
                              stderr=subprocess.PIPE, text=True) for who in ("a", "b")]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    shown = empty_kb.context.show("shared")
    assert shown["count"] == 24 and [m["seq"] for m in shown["messages"]] == list(range(1, 25))
    contents = [m["content"] for m in shown["messages"]]
    for who in ("a", "b"):
        assert [c for c in contents if c.startswith(who + "-")] == [f"{who}-{i}" for i in range(1, 13)]


def test_a_byte_order_mark_in_the_input_is_not_content(kbx, tmp_path):
    f = tmp_path / "bom.json"
    f.write_bytes(b"\xef\xbb\xbf" + json.dumps([{"role": "user", "content": "hi there, open it"}]).encode())
    res = kbx("context", "add", "-s", "bom", "--input", str(f), "-f", "json")
    assert res.code == 0, res.stderr
    assert res.json()["added"][0]["normalised"] == "open it"


def test_session_input_may_add_only_system_messages_and_skills(kbx, tmp_path):
    kbx("context", "add", "-s", "si", "-r", "user", "hello")
    f = tmp_path / "extra.json"
    f.write_text(json.dumps({"messages": [{"role": "user", "content": "not the session's"}]}))
    res = kbx("context", "compress", "--session", "si", "--input", str(f), "--window", "4096", "-f", "json")
    assert res.code == 2 and res.error()["code"] == "usage"
    f.write_text(json.dumps({"messages": [{"role": "system", "content": "Be brief."}]}))
    res = kbx("context", "compress", "--session", "si", "--input", str(f), "--window", "4096", "-f", "json")
    assert res.code == 0 and res.json()["messages"][0] == {"role": "system", "content": "Be brief."}


def test_no_llm_keeps_the_configured_models_window(kbx, tmp_path):
    f = tmp_path / "c.json"
    f.write_text(json.dumps({"messages": conversation(3)}))
    base = ("context", "compress", "--input", str(f), "--llm-model", "gpt-4o", "--llm-backend", "openai", "-f", "json")
    with_llm_settings = kbx(*base, "--no-llm").json()["stats"]
    assert with_llm_settings["window"] == 128_000 and with_llm_settings["window_source"] == "model gpt-4o"
    res = kbx("context", "compress", "--input", str(f), "--llm-backend", "bogus", "--no-llm", "-f", "json")
    assert res.code == 2                                       # a bad backend is bad usage with or without --no-llm
