"""What people expect of an LLM chat CLI: /export, @path attachments (and their completion), /compact, a
token-usage line per turn kept off piped stdout, session list previews, --file and --stdin-prompt."""

from __future__ import annotations

import json
import stat

from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from fake_llm import FakeBackend
from kb_indexer.chat.commands import run_command
from kb_indexer.chat.engine import ChatEngine
from kb_indexer.chat.source import open_source
from kb_indexer.chat.terminal import SlashCompleter
from kb_indexer.llm.base import Completion
from kb_indexer.llm.config import LLMOptions, resolve
from kb_indexer.llm.structured import LLMClient
from tests.conftest import REPO

DOC = "alphago-architecture.md"


def engine(db, *answers, fake=None):
    kb, source, note = open_source(db, False)
    fake = fake or FakeBackend(list(answers))
    client = LLMClient(resolve(LLMOptions(backend="fake", retries=0)), conn=kb.conn, backend=fake, sleep=lambda s: None)
    return ChatEngine(kb, source, note, client=client), fake


def test_export_writes_the_session_as_markdown_or_json_in_a_private_file(kb, tmp_path, monkeypatch):
    work = tmp_path / "checkout"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    eng, _ = engine(kb.db_path, "MCTS guides the search [alphago-architecture.md].")
    try:
        list(eng.turn("how does alphago search"))
        md = run_command(eng, "/export")
        js = run_command(eng, f"/export {tmp_path / 'out' / 'chat.json'}")
    finally:
        eng.close()
    assert list(work.iterdir()) == []          # nothing left in the working folder (a checkout, often)
    path = tmp_path / "data" / "kbindex" / "exports" / f"{eng.session_id}.md"
    assert md.error is None and md.data["path"] == str(path) and md.data["messages"] == 2
    text = path.read_text()
    assert "## User\n\nhow does alphago search" in text and "## Assistant\n\nMCTS guides the search" in text
    assert js.error is None and js.data["format"] == "json"
    data = json.loads((tmp_path / "out" / "chat.json").read_text())
    assert [m["role"] for m in data["messages"]] == ["user", "assistant"] and data["session"] == eng.session_id
    for written in (path, tmp_path / "out" / "chat.json"):
        assert stat.S_IMODE(written.stat().st_mode) == 0o600


def test_an_at_path_attaches_a_document_and_one_outside_the_kb_is_refused(kb, tmp_path):
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\nthe launch code is 1234\n")
    eng, fake = engine(kb.db_path, "It combines networks with search.")
    try:
        events = list(eng.turn(f"summarise @{DOC}, and compare with @{secret}."))
    finally:
        eng.close()
    attachments = next(e for e in events if e.kind == "attachments").data
    assert attachments["attached"] == [DOC]
    assert [r["path"] for r in attachments["refused"]] == [str(secret)]
    system = fake.calls[-1]["messages"][0]["content"]
    assert "# Documents the user attached to this message" in system and f"Path: {DOC}" in system
    assert "launch code" not in system


def test_at_completion_offers_the_indexed_paths():
    completer = SlashCompleter(lambda: ["notes/alpha.md", "notes/beta.md", "research/alphago.md"])
    got = [c.text for c in completer.get_completions(Document("explain @notes/a"), CompleteEvent())]
    assert got == ["@notes/alpha.md"]
    got = [c.text for c in completer.get_completions(Document("explain @alpha"), CompleteEvent())]
    assert got == ["@notes/alpha.md", "@research/alphago.md"]       # no prefix match: those containing it


def test_compact_folds_earlier_turns_into_the_llms_summary(kb):
    class Summarising(FakeBackend):
        def complete_json(self, messages, schema, **kw):
            self._record({"kind": "complete_json", "task": kw.get("task")})
            return Completion(text='{"summary": "They use batch size 100."}')

    eng, fake = engine(kb.db_path, fake=Summarising(["A.", "B.", "C."]))
    try:
        assert run_command(eng, "/compact").data["compacted"] is False       # nothing yet
        for q in ("we use batch size 100 for training", "and the learning rate?", "what about exploration?"):
            list(eng.turn(q))
        out = run_command(eng, "/compact")
        preview = eng.context_preview()
    finally:
        eng.close()
    assert out.error is None and out.data["compacted"] and out.data["source"] == "llm"
    assert out.data["folded_messages"] == 4 and out.data["tokens_after"] < out.data["tokens_before"]
    assert preview["summary"] == "They use batch size 100."
    assert any(c["kind"] == "complete_json" and c["task"] == "context_summary" for c in fake.calls)


def test_each_turn_reports_its_token_use_on_stderr_never_on_piped_stdout(run, kb, tmp_path):
    script = tmp_path / "llm.json"
    script.write_text(json.dumps([{"text": "First answer."}, {"text": "Second answer."}]))
    env = {"PYTHONPATH": str(REPO), "KBINDEX_FAKE_LLM": str(script), "KBINDEX_LLM_RETRIES": "0",
           "KBINDEX_CHAT_DB": str(tmp_path / "store.db")}
    res = run("chat", "--llm-backend", "fake", "--db", kb.db_path, input="what is alphago\nand mcts?\n", env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["First answer.", "Second answer."]
    usage = [line for line in res.stderr.splitlines() if line.startswith("tokens: ")]
    assert len(usage) == 2 and all(" in · " in line and line.endswith(" out") for line in usage)
    listed = run("chat", "--list", "--db", kb.db_path, "-f", "json", env=env).json()["sessions"]
    assert listed[0]["first_message"] == "what is alphago"
    table = run("chat", "--list", "--db", kb.db_path, env=env)
    assert "what is alphago" in table.stdout


def test_a_whole_file_or_the_whole_of_stdin_is_one_prompt(run, kb, tmp_path):
    script = tmp_path / "llm.json"
    script.write_text(json.dumps([{"text": "One answer."}, {"text": "Another answer."}]))
    env = {"PYTHONPATH": str(REPO), "KBINDEX_FAKE_LLM": str(script), "KBINDEX_LLM_RETRIES": "0",
           "KBINDEX_CHAT_DB": str(tmp_path / "store.db")}
    prompt = tmp_path / "PROMPT.md"
    prompt.write_text("/source is not a command here\n\nExplain alphago.\nIn two lines.\n")
    res = run("chat", "--llm-backend", "fake", "--db", kb.db_path, "--file", prompt, "-f", "json", env=env)
    assert res.returncode == 0, res.stderr
    turns = [json.loads(line) for line in res.stdout.splitlines()]
    assert len(turns) == 1 and turns[0]["answer"] == "One answer." and turns[0]["usage"]["total_tokens"] > 0
    assert turns[0]["input"]["original"] == prompt.read_text()
    res = run("chat", "--llm-backend", "fake", "--db", kb.db_path, "--stdin-prompt", input="line one\nline two\n",
              env=env)
    assert res.returncode == 0 and res.stdout == "Another answer.\n"
    sent = [json.loads(line) for line in open(str(script) + ".calls.jsonl")][-1]["messages"][-1]["content"]
    assert "line one" in sent and "line two" in sent
    empty = run("chat", "--llm-backend", "fake", "--db", kb.db_path, "--stdin-prompt", input="  \n", env=env)
    assert empty.returncode == 2 and "empty" in empty.stderr
