"""The console examples in README.md and docs/*.md run as shown, so the docs stay true.

Convention (docs/README.md, "Examples"): a ```console block's ``$ ...`` lines are commands (a line ending in
``\\`` continues on the next one), the other lines are their output. Every block runs in a fresh copy of the
bundled knowledge base, already indexed (``kbindex init && kbindex sync``), with this checkout's ``kbindex``
first on PATH, no LLM configured and no ``.env`` read; the block's commands run in order through ``bash``
(a ``cd`` carries over to the next command), and each must exit 0. A command run with ``--format json`` /
``-f json`` and no redirection must print JSON (one object, or one per line for piped ``chat``).

A block that needs what a test run does not have is marked by a comment on the line before it and skipped
with that reason: ``<!-- docs-test: needs-llm -->``, ``<!-- docs-test: needs-extra local|mcp -->``,
``<!-- docs-test: needs-postgres -->``, ``<!-- docs-test: needs-server -->`` (a long-running server).
Shell commands shown as ```bash / ```sh blocks are set-up and benchmark commands, never ``kbindex``
examples (checked below). Relative links between the pages must lead to a page and heading that exist.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import BUNDLED_KB, BUNDLED_SIMILARITIES, REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
MARK = re.compile(r"^<!--\s*docs-test:\s*(needs-llm|needs-extra|needs-postgres|needs-server)\b\s*(.*?)\s*-->$")
FENCE = re.compile(r"^```(\S*)\s*$")
JSON_FLAG = re.compile(r"(?:--format|-f)[ =]json\b")


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    body: list[str]
    mark: str | None = None
    commands: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def _blocks(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, j = i, i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        prev = next((lines[k].strip() for k in range(start - 1, -1, -1) if lines[k].strip()), "")
        mark = MARK.match(prev)
        out.append(Block(page, start + 1, m.group(1), lines[start + 1:j],
                         f"{mark.group(1)} {mark.group(2)}".strip() if mark else None))
        i = j + 1
    for block in out:
        block.commands = _commands(block.body) if block.lang == "console" else []
    return out


def _commands(body: list[str]) -> list[str]:
    commands: list[str] = []
    continued = False
    for line in body:
        if continued:
            commands[-1] += "\n" + line
        elif line.startswith("$ "):
            commands.append(line[2:])
        else:
            continue
        continued = line.rstrip().endswith("\\")
    return commands


ALL = [b for page in PAGES for b in _blocks(page)]
CONSOLE = [b for b in ALL if b.lang == "console"]


def test_the_pages_have_console_examples_to_run():
    """The convention is in use (a parser that found nothing would pass every test below vacuously)."""
    assert len([b for b in CONSOLE if not b.mark]) >= 7
    assert all(b.commands for b in CONSOLE), [b.id for b in CONSOLE if not b.commands]


@pytest.fixture(scope="module")
def indexed_kb(tmp_path_factory):
    """The bundled knowledge base, with skills/ beside it, indexed once; each block gets a copy."""
    root = tmp_path_factory.mktemp("docs-kb") / "kb"
    root.mkdir()
    shutil.copytree(BUNDLED_KB, root / "knowledge-base")
    shutil.copy(BUNDLED_SIMILARITIES, root / "similarities.json")
    shutil.copytree(REPO / "skills", root / "skills")
    bin_dir = root.parent / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "kbindex"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{REPO / "kbindex.py"}" "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    (root.parent / "home").mkdir()   # a reader's home: where examples write what is not the knowledge base's
    env = dict(os.environ, PATH=os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")]),
               KBINDEX_NO_DOTENV="1", HOME=str(root.parent / "home"),
               XDG_DATA_HOME=str(root.parent / "home" / "data"))
    for var in ("KBINDEX_DB", "KBINDEX_KB", "KBINDEX_LLM_BACKEND", "KBINDEX_LLM_MODEL", "OLLAMA_HOST",
                "GEMINI_API_KEY", "GOOGLE_API_KEY", "KBINDEX_OPENAI_BASE_URL", "OPENAI_API_KEY",
                "KBINDEX_EMBED_BACKEND", "KBINDEX_EMBED_MODEL", "KBINDEX_FAKE_EMBED", "KBINDEX_ENV_FILE",
                "KBINDEX_LLM_PLUGINS", "KBINDEX_CHAT_DB", "KBINDEX_CHAT_HISTORY", "KBINDEX_SKILLS"):
        env.pop(var, None)
    for step in ("kbindex init", "kbindex sync"):
        proc = subprocess.run(["bash", "-c", step], cwd=root, env=env, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
    return root, env


def _run_block(block: Block, root: Path, env: dict) -> None:
    cwd, cwd_file = root, root.parent / f"cwd-{os.getpid()}"
    for command in block.commands:
        script = f'{command}\nrc=$?\npwd > "{cwd_file}"\nexit $rc\n'
        proc = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=180)
        assert proc.returncode == 0, f"{block.id}: `{command}` exited {proc.returncode}:\n{proc.stderr}"
        cwd = Path(cwd_file.read_text(encoding="utf-8").strip())
        last = re.split(r"&&|\|", command)[-1]
        if JSON_FLAG.search(last) and ">" not in last:
            _assert_json(proc.stdout, f"{block.id}: `{command}`")


def _assert_json(stdout: str, where: str) -> None:
    try:
        json.loads(stdout)
    except json.JSONDecodeError:
        lines = [line for line in stdout.splitlines() if line.strip()]
        assert lines, f"{where} printed nothing"
        for line in lines:
            try:
                json.loads(line)
            except json.JSONDecodeError:
                raise AssertionError(f"{where} did not print JSON:\n{stdout[:2000]}") from None


@pytest.mark.parametrize("block", CONSOLE, ids=[b.id for b in CONSOLE])
def test_console_example_runs_as_shown(block, indexed_kb, tmp_path):
    if block.mark:
        pytest.skip(f"{block.id}: {block.mark}")
    template, env = indexed_kb
    root = tmp_path / "kb"
    shutil.copytree(template, root)
    _run_block(block, root, env)


def test_kbindex_examples_are_console_blocks():
    """A ``kbindex`` command in a ```bash block would never run here: it must be a ```console example."""
    offenders = [b.id for b in ALL if b.lang in ("bash", "sh", "shell", "")
                 and any(line.lstrip().startswith("kbindex ") for line in b.body)]
    assert offenders == []


def _slug(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    fenced, out = False, set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"^#{1,6} (.*)$", line)):
            out.add(_slug(m.group(1)))
    return out


def test_relative_links_lead_to_a_page_and_heading_that_exist():
    broken = []
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists() or (anchor and dest.suffix == ".md" and anchor not in _anchors(dest)):
                broken.append(f"{page.relative_to(REPO)}: {target}")
    assert broken == []


def test_every_docs_page_is_in_the_index():
    index = (REPO / "docs" / "README.md").read_text(encoding="utf-8")
    missing = [p.name for p in PAGES if p.parent.name == "docs" and p.name != "README.md"
               and f"]({p.name})" not in index]
    assert missing == []


WRITES = re.compile(r"(?:--output|\s-o)[ =](\S+)|(?<![0-9&])>>?\s*(\S+)")


def test_examples_write_no_file_into_the_working_folder():
    """A file an example writes (``--output F``, ``-o F``, ``> F``) goes outside the working folder: a reader runs
    the tour in a checkout, where it would be left untracked (``~/...``, an absolute path, a variable's folder). The
    knowledge base's own ``similarities.json`` is the one exception."""
    offenders = [f"{block.id}: {command}" for block in CONSOLE for command in block.commands
                 for m in WRITES.finditer(re.sub(r"\s#\s.*", "", command))   # not in a comment
                 if not (m.group(1) or m.group(2)).lstrip('"').startswith(("~", "/", "$"))
                 and (m.group(1) or m.group(2)) != "similarities.json"]
    assert offenders == []
