"""A `.env` is read from one place only and can set only LLM settings: never code to load.

Only ``KBINDEX_ENV_FILE`` (real environment) or ``./.env`` is read, never a parent's; a
``KBINDEX_LLM_PLUGINS`` line (or any other KBINDEX_* name outside the allow-list) is ignored with a
warning; a `.env` that is a symlink, not the user's, writable by others, too large or not a regular
file is ignored with a warning.
"""

from __future__ import annotations

import os

import pytest

from kb_indexer.llm import config
from kb_indexer.llm.config import resolve

MARKER = "PLUGIN_RAN"


@pytest.fixture
def dotenv_on(dotenv_on, monkeypatch):
    """`.env` reading on (tests/llm/conftest.py) and no plugin from the real environment."""
    monkeypatch.delenv("KBINDEX_LLM_PLUGINS", raising=False)
    config.reset_env_cache()


def evil_plugin(folder) -> str:
    """A plugin that proves it ran by writing a marker file beside itself."""
    plugin = folder / "evil_plugin.py"
    plugin.write_text("from pathlib import Path\nPath(__file__).with_name('PLUGIN_RAN').write_text('ran')\n")
    return str(plugin)


def test_plugin_in_the_current_directory_env_is_not_imported_by_the_cli(run, tmp_path, closed_port, dotenv_on):
    project = tmp_path / "cloned-notes"
    project.mkdir()
    (project / ".env").write_text(f"KBINDEX_LLM_PLUGINS={evil_plugin(project)}\nKBINDEX_LLM_MODEL=from-file\n")
    res = run("doctor", "--no-roundtrip", "--format", "json", cwd=project,
              env={"OLLAMA_HOST": f"127.0.0.1:{closed_port}"})
    assert res.returncode == 0, res.stderr
    assert not (project / MARKER).exists()
    assert "KBINDEX_LLM_PLUGINS" in res.stderr and str(project / ".env") in res.stderr
    llm = res.json()["llm"]  # the allowed line of the same file is read
    assert llm["model"] == "from-file" and llm["sources"]["model"] == ".env"
    assert llm["env_file"] == str(project / ".env")


def test_env_in_a_parent_folder_is_not_read(tmp_path, monkeypatch, dotenv_on):
    (tmp_path / ".env").write_text(f"KBINDEX_LLM_PLUGINS={evil_plugin(tmp_path)}\nKBINDEX_LLM_BACKEND=gemini\n")
    sub = tmp_path / "notes" / "deeper"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    c = resolve()
    assert not (tmp_path / MARKER).exists()
    assert c.backend == "ollama" and c.sources["backend"] == "default" and c.env_file is None
    assert "KBINDEX_LLM_PLUGINS" not in os.environ


def test_plugin_in_the_current_directory_env_is_not_imported_by_the_api(tmp_path, monkeypatch, capsys,
                                                                       dotenv_on):
    (tmp_path / ".env").write_text(f"KBINDEX_LLM_PLUGINS={evil_plugin(tmp_path)}\n")
    monkeypatch.chdir(tmp_path)
    from kb_indexer.api import KnowledgeBase
    from kb_indexer.llm.config import LLMOptions

    KnowledgeBase.doctor(tmp_path / "kbindex.db", LLMOptions(backend="none"), roundtrip=False)
    resolve()  # looks a backend up: the moment plugins are imported
    assert not (tmp_path / MARKER).exists() and "KBINDEX_LLM_PLUGINS" not in os.environ
    err = capsys.readouterr().err
    assert err.count("KBINDEX_LLM_PLUGINS") == 1 and "names code to load" in err  # one warning, however often


def test_other_kbindex_settings_in_env_are_ignored_with_a_warning(tmp_path, monkeypatch, capsys, dotenv_on):
    (tmp_path / ".env").write_text("KBINDEX_DB=/elsewhere/kbindex.db\nKBINDEX_ENV_FILE=/tmp/x\n"
                                   "HTTPS_PROXY=http://127.0.0.1:9\nKBINDEX_LLM_TIMEOUT=7\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    c = resolve()
    assert c.timeout == 7.0
    assert not {"KBINDEX_DB", "KBINDEX_ENV_FILE", "HTTPS_PROXY"} & set(os.environ)
    err = capsys.readouterr().err
    assert "KBINDEX_DB ignored" in err and "KBINDEX_ENV_FILE ignored" in err and str(tmp_path / ".env") in err


def test_kbindex_env_file_is_read_instead_of_the_current_directory_env(tmp_path, monkeypatch, dotenv_on):
    named = tmp_path / "settings" / "kbindex.env"
    named.parent.mkdir()
    named.write_text(f"KBINDEX_LLM_MODEL=named-model\nKBINDEX_LLM_PLUGINS={evil_plugin(named.parent)}\n")
    work = tmp_path / "work"
    work.mkdir()
    (work / ".env").write_text("KBINDEX_LLM_MODEL=cwd-model\n")
    monkeypatch.chdir(work)
    monkeypatch.setenv("KBINDEX_ENV_FILE", str(named))
    c = resolve()
    assert c.model == "named-model" and c.sources["model"] == ".env" and c.env_file == str(named)
    assert not (named.parent / MARKER).exists()


def test_env_values_are_not_expanded_from_the_environment(tmp_path, monkeypatch, dotenv_on):
    (tmp_path / ".env").write_text("KBINDEX_LLM_BACKEND=openai\nKBINDEX_LLM_MODEL=${OPENAI_API_KEY}\n"
                                   "KBINDEX_OPENAI_BASE_URL=http://127.0.0.1:9/${OPENAI_API_KEY}/v1\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-secret")
    c = resolve()
    assert "sk-real-secret" not in c.model and "sk-real-secret" not in c.base_url
    assert c.api_key is None


def _world_writable(path):
    path.chmod(0o666)


def _group_writable(path):
    path.chmod(0o620)


def _symlink(path):
    target = path.parent.parent / "real.env"
    path.rename(target)
    path.symlink_to(target)


def _not_mine(path):
    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    os.chown(path, 65534, 65534)


def _too_large(path):
    path.write_text("KBINDEX_LLM_MODEL=from-file\n" + "# padding\n" * 8000)


@pytest.mark.parametrize("spoil, reason", [
    (_world_writable, "writable by group or others"), (_group_writable, "writable by group or others"),
    (_symlink, "symbolic link"), (_not_mine, "not owned by the current user"), (_too_large, "larger than"),
])
def test_an_unsafe_env_file_is_ignored_with_a_warning(tmp_path, monkeypatch, capsys, dotenv_on, spoil, reason):
    folder = tmp_path / "notes"
    folder.mkdir()
    env_file = folder / ".env"
    env_file.write_text("KBINDEX_LLM_MODEL=from-file\n")
    env_file.chmod(0o600)
    spoil(env_file)
    monkeypatch.chdir(folder)
    c = resolve()
    assert c.model == "llama3.2:3b" and c.env_file is None and "KBINDEX_LLM_MODEL" not in os.environ
    err = capsys.readouterr().err
    assert reason in err and str(env_file) in err


@pytest.mark.parametrize("make", ["fifo", "directory"])
def test_an_env_that_is_not_a_regular_file_is_ignored_without_blocking(tmp_path, monkeypatch, capsys, dotenv_on,
                                                                      make):
    named = tmp_path / "kbindex.env"
    os.mkfifo(named) if make == "fifo" else named.mkdir()
    monkeypatch.setenv("KBINDEX_ENV_FILE", str(named))
    c = resolve()  # a FIFO nobody writes to would block a plain open()
    assert c.env_file is None and "not a regular file" in capsys.readouterr().err


def test_a_virtualenv_folder_named_env_is_passed_over_silently(tmp_path, monkeypatch, capsys, dotenv_on):
    (tmp_path / ".env" / "bin").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    c = resolve()
    assert c.env_file is None and capsys.readouterr().err == ""


def test_a_local_model_folder_named_by_env_is_not_loaded(tmp_path, monkeypatch, dotenv_on):
    """Loading a sentence-transformers folder can run code from it: a .env may name only a packaged model."""
    from kb_indexer.errors import KbError
    from kb_indexer.llm import local_backend
    from kb_indexer.llm.config import resolve_embed
    from kb_indexer.llm.embedding import EmbedClient

    folder = tmp_path / "evil-model"
    folder.mkdir()
    (tmp_path / ".env").write_text(f"KBINDEX_EMBED_BACKEND=local\nKBINDEX_EMBED_MODEL={folder}\n")
    monkeypatch.chdir(tmp_path)
    loaded = []
    monkeypatch.setattr(local_backend, "loader", lambda path: loaded.append(path))
    monkeypatch.setattr(local_backend, "_models", {})
    client = EmbedClient(resolve_embed(), sleep=lambda s: None)
    try:
        with pytest.raises(KbError, match="comes from a .env file"):
            client.embed(["x"])
    finally:
        client.close()
    assert loaded == []
