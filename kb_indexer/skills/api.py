"""The skills sub-API: ``kb.skills`` of :class:`kb_indexer.api.KnowledgeBase` (built on first use).

    with KnowledgeBase.open() as kb:
        kb.skills.sync(["~/.claude/skills"])
        kb.skills.match("turn off the living-room TV")["matched"]
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any, Literal, cast, overload

from kb_indexer.config import DbTarget
from kb_indexer.errors import UsageError, ValidationError
from kb_indexer.limits import check_int_arg, check_session_id, check_utf8
from kb_indexer.skills.llm_match import NO_BACKEND, llm_step
from kb_indexer.skills.match import MIN_SCORE, MatchOptions, keyword_match, load_index
from kb_indexer.skills.session import SessionOptions, load_skills, record_turn, reset_session, show_session
from kb_indexer.skills.source import skill_source
from kb_indexer.skills.sync import VECTORS_KEY, list_skills, remove_skill, show_skill, skills_version, sync_skills
from kb_indexer.store import meta
from kb_indexer.store.errors import translating
from kb_indexer.store.dbapi import Connection

if TYPE_CHECKING:
    from kb_indexer.llm.config import LLMOptions
    from kb_indexer.llm.structured import LLMClient
    from kb_indexer.results import (SkillMatchResult, SkillRemoveResult, SkillSessionResetResult, SkillSessionResult,
                                    SkillShowResult, SkillsEmbedResult, SkillsListResult, SkillsLoadResult,
                                    SkillsSyncResult)

MAX_MESSAGE_CHARS = 20_000
MAX_TOP = 50
MAX_CANDIDATES = 100


def _check_text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be text")
    return check_utf8(value, what)



@translating  # a locked, read-only, full or damaged index raises busy, read_only, disk_full, bad_database
class SkillsAPI:
    """Skills: sync, embed, all, show, source, remove, match, session, load."""

    #: ``fallback_reason`` of a match that did not ask an LLM because none is configured (not a failure)
    NO_BACKEND = NO_BACKEND

    def __init__(self, conn: Connection, db_path: DbTarget | None = None) -> None:
        self.conn = conn
        self.db_path = db_path

    def sync(self, dirs: list[str] | None = None, forget: list[str] | None = None) -> SkillsSyncResult:
        """Index ``<dir>/<name>/SKILL.md`` of the given, remembered and ``KBINDEX_SKILLS`` directories;
        ``forget``: remembered directories to forget (their skills are dropped, in ``removed``)."""
        for d in [*(dirs or []), *(forget or [])]:
            _check_text(str(d), "a skills directory")
        return cast("SkillsSyncResult", sync_skills(self.conn, [str(d) for d in dirs or []],
                                                      [str(d) for d in forget or []]))

    def embed(self, everything: bool = False) -> SkillsEmbedResult:
        """Store each skill's name-and-description vector of the local all-MiniLM-L6-v2 model (only those
        whose text changed; all with ``everything``): :meth:`match` then adds its semantic channel."""
        return cast("SkillsEmbedResult", _vectors().embed_skills(self.conn, everything))

    def all(self) -> SkillsListResult:
        return cast("SkillsListResult", list_skills(self.conn))

    def show(self, name: str) -> SkillShowResult:
        return cast("SkillShowResult", show_skill(self.conn, _check_text(name, "the skill name")))

    def source(self, name: str) -> str:
        """The skill's SKILL.md as it is on disk now (its stored paths checked, no symlink followed)."""
        return skill_source(self.conn, _check_text(name, "the skill name"))

    def remove(self, name: str) -> SkillRemoveResult:
        return cast("SkillRemoveResult", remove_skill(self.conn, _check_text(name, "the skill name")))

    def match(self, message: str, top: int = 3, min_score: float | None = None, *,
                     use_llm: bool = False, candidates: int = 20, llm: LLMOptions | None = None,
                     client: LLMClient | None = None, session: str | None = None, evict_after: int = 3,
                     max_loaded: int = 5) -> SkillMatchResult:
        """The skills a chat message needs (``matched`` may be empty, and is for a message no skill serves).

        The keyword matcher (:mod:`kb_indexer.skills.match`) scores every skill; ``min_score`` overrides its
        threshold. When the skills have vectors (:meth:`embed`), the local model's cosine similarity adds a
        skill the keywords missed (:mod:`kb_indexer.skills.vectors`; ``method`` ``keyword+vectors``, each
        match's ``source``; ``vectors.fallback`` says why not). With ``use_llm`` and an LLM backend configured (``llm`` =
        :class:`kb_indexer.llm.config.LLMOptions`, ``KBINDEX_LLM_BACKEND`` or ``.env``; ``client`` for
        tests), the model chooses among the ``candidates`` best keyword candidates
        (:mod:`kb_indexer.skills.llm_match`); on any failure the keyword result stays, with
        ``fallback_reason``. With ``session``, the match is one turn of that conversation
        (:mod:`kb_indexer.skills.session`): ``evict_after`` turns, at most ``max_loaded`` loaded skills.
        """
        _check_message(message)
        check_int_arg(top, "top (--top)", 1, MAX_TOP)
        check_int_arg(candidates, "candidates (--candidates)", 1, MAX_CANDIDATES)
        if min_score is not None and (not isinstance(min_score, (int, float)) or isinstance(min_score, bool)
                                      or not math.isfinite(min_score) or min_score < 0):
            raise UsageError(f"min_score (--min-score) must be a number >= 0, got {min_score!r}")
        session_opts = None if session is None else SessionOptions(
            check_session_id(session), check_int_arg(evict_after, "evict_after (--evict-after)", 1, 1000),
            check_int_arg(max_loaded, "max_loaded (--max-loaded)", 1, MAX_TOP))
        started = time.perf_counter()
        index = load_index(self.conn, skills_version(self.conn))
        opts = MatchOptions(top=top, candidates=candidates,
                            min_score=MIN_SCORE if min_score is None else float(min_score))
        out = keyword_match(index, message, opts)
        out.update(cache={"hit": False}, fallback_reason=None, prompt_tokens_estimate=None, llm=None,
                   vectors={"used": False, "fallback": "no skill vectors (run `kbindex skills embed`): keyword result"})
        if meta.has(self.conn, VECTORS_KEY):   # the vectors are read once, by the step
            _vectors().vector_step(self.conn, index, message, out, top)
        if use_llm:
            llm_step(self.conn, index, message, opts, out, llm, client)
        out["session"] = None
        if session_opts is not None:
            out["session"] = record_turn(self.conn, index, message, [m["name"] for m in out["matched"]],
                                         session_opts)
        out["elapsed_ms"] = round((time.perf_counter() - started) * 1000, 2)
        return cast("SkillMatchResult", out)

    @overload
    def session(self, session: str, reset: Literal[False] = False) -> SkillSessionResult: ...

    @overload
    def session(self, session: str, reset: bool) -> SkillSessionResult | SkillSessionResetResult: ...

    def session(self, session: str, reset: bool = False) -> SkillSessionResult | SkillSessionResetResult:
        """A match session's state (turn, skills with priority, match count, last matched turn, loaded);
        with ``reset``, the session is deleted (the next match starts it again at turn 1)."""
        sid = check_session_id(session)
        if reset:
            return cast("SkillSessionResetResult", reset_session(self.conn, sid))
        return cast("SkillSessionResult", show_session(self.conn, sid))

    def load(self, session: str, budget: int | None = None) -> SkillsLoadResult:
        """The loaded skills of a session, bodies included, most important first, within ``budget``
        estimated tokens (None: no limit); ``left_out`` names those that did not fit."""
        if budget is not None:
            check_int_arg(budget, "budget (--budget)", 1, 10_000_000)
        return cast("SkillsLoadResult", load_skills(self.conn, check_session_id(session), budget))


def _vectors() -> Any:
    from kb_indexer.skills import vectors  # lazy: numpy and the local model, only for an index with skill vectors

    return vectors


def _check_message(message: Any) -> None:
    _check_text(message, "the message")
    if len(message) > MAX_MESSAGE_CHARS:
        raise ValidationError(f"the message is longer than {MAX_MESSAGE_CHARS} characters")
