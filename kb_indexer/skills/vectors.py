"""The skill matcher's semantic channel: the cosine similarity of a message to each skill's name and description.

``kbindex skills embed`` (:func:`embed_skills`) stores one vector per skill, of ``"<name words>: <description>"``,
computed by the local all-MiniLM-L6-v2 model with the numpy encoder (:mod:`kb_indexer.llm.minilm`: no torch,
the same vectors as sentence-transformers). They live in the ``meta`` table under :data:`VECTORS_KEY` (float32,
base64, with each skill's text digest), so a changed description is embedded again and a skill whose text
changed since is simply left out of this channel until the next ``skills embed``.

When the index has such vectors, :func:`vector_step` embeds the message with the same model and adds the skill
of highest cosine when it is at least :data:`MIN_COSINE` and leads the next skill by :data:`MARGIN` (one clear
winner: a message needing no skill is near many skills a little, a paraphrase of one skill is near that one).
The keyword matcher decides first (a skill found by both says ``keyword+vectors``); a keyword match whose
cosine to the message is below :data:`MIN_KEYWORD_COSINE` is dropped (a word shared by accident, the meaning
unrelated), in ``vectors.vetoed``. Then the near-equivalents of what matched join it, up to ``top`` in all
(:func:`_add_neighbours`: a skill whose vector's cosine to a matched skill's is at least
:data:`NEIGHBOUR_COSINE` and whose cosine to the message is at least :data:`NEIGHBOUR_MIN_COSINE`; a catalog
often has several skills for one task, ``pdf``, ``pymupdf-pdf``, ``mineru-pdf``), in ``vectors.neighbours``;
a message with no match gets none.
Without vectors, or when the model cannot run here, the match is the keyword match exactly, and
``vectors.fallback`` says why.

``MIN_COSINE``, ``MARGIN``, ``MIN_KEYWORD_COSINE``, ``NEIGHBOUR_COSINE`` and ``NEIGHBOUR_MIN_COSINE`` were
chosen on the development queries and the tuning sets of ``bench/skills_eval.py --grid`` only (best pooled F1
with negatives >= 0.9; of equal F1, the higher thresholds), never on a held-out message; they hold for
all-MiniLM-L6-v2, the one model this channel uses.
The near-equivalent pair: 0.75 / 0.35 pooled F1 0.574 (the rule off 0.561, negatives unchanged: it never
adds to an empty match); 0.70 / 0.35 scored 0.578, one message's worth, and the stricter 0.75 was kept.
Other rules and models tried on the same sets, and why none was kept: docs/skills.md (the vectors matcher).
"""

from __future__ import annotations

import base64
import hashlib
import time
from typing import Any

import numpy as np

from kb_indexer.errors import KbError
from kb_indexer.llm import minilm
from kb_indexer.llm.base import LLMConfigError, LLMError
from kb_indexer.llm.config import EmbedOptions, resolve_embed
from kb_indexer.llm.embedding import EmbedClient
from kb_indexer.llm.local_backend import DEFAULT_MODEL, model_path
from kb_indexer.skills.match import SkillIndex
from kb_indexer.skills.sync import VECTORS_KEY
from kb_indexer.store import meta
from kb_indexer.store.connection import transaction
from kb_indexer.store.dbapi import Connection

BACKEND, MODEL = "local", DEFAULT_MODEL
DIM = 384   # all-MiniLM-L6-v2's vectors
MIN_COSINE = 0.54
MARGIN = 0.08
MIN_KEYWORD_COSINE = 0.1
NEIGHBOUR_COSINE = 0.75
NEIGHBOUR_MIN_COSINE = 0.35
BATCH = 32


def skill_text(name: str, description: str) -> str:
    """What is embedded for a skill: its name as words, then its description."""
    return f"{name.replace('-', ' ').replace('_', ' ')}: {description}"


def _digest(name: str, description: str) -> str:
    return hashlib.sha256(skill_text(name, description).encode("utf-8")).hexdigest()[:16]


def model_problem() -> str | None:
    """Why this channel's model cannot run here (its package, tokenizers or threadpoolctl missing); None: it can."""
    try:
        return minilm.unsupported(model_path(MODEL))
    except LLMConfigError as exc:
        return exc.message


def _client(for_queries: bool) -> EmbedClient:
    """The local model (the numpy encoder, no torch): a message as a question (one thread), the skills as a
    batch of documents (every core)."""
    return EmbedClient(resolve_embed(EmbedOptions(backend=BACKEND, model=MODEL)), batch_size=BATCH,
                       for_queries=for_queries)


def _stored_raw(conn: Connection) -> dict[str, tuple[str, np.ndarray]]:
    data = meta.get_json(conn, VECTORS_KEY)
    if data.get("backend") != BACKEND or data.get("model") != MODEL:
        return {}
    try:
        names, digests, dim = list(data["names"]), list(data["digests"]), int(data["dim"])
        if dim != DIM or not all(isinstance(x, str) for x in names + digests):
            raise ValueError("not this model's vectors")
        matrix = np.frombuffer(base64.b64decode(data["data"]), dtype="<f4").reshape(len(names), dim)
    except (KeyError, TypeError, ValueError):   # damaged: as if absent (the next `skills embed` rewrites it)
        return {}
    # a vector that is not finite or not of unit length is left out (a cosine stays a cosine, never NaN)
    usable = np.abs(np.linalg.norm(matrix, axis=1) - 1.0) < 1e-3 if len(names) else np.zeros(0, dtype=bool)
    return {n: (d, matrix[i]) for i, (n, d) in enumerate(zip(names, digests)) if usable[i]}


def embed_skills(conn: Connection, everything: bool = False) -> dict[str, Any]:
    """Embed every skill whose name or description changed since its vector was stored (all with
    ``everything``); vectors of removed skills are dropped."""
    started = time.monotonic()
    skills = [(str(n), str(d)) for n, d in conn.execute("SELECT name, description FROM skills ORDER BY name")]
    stored = _stored_raw(conn)
    old = {} if everything else stored
    todo = [(n, d) for n, d in skills if n not in old or old[n][0] != _digest(n, d)]
    client = _client(for_queries=False)
    try:
        new = client.embed([skill_text(n, d) for n, d in todo]) if todo else None
    finally:
        client.close()
    fresh = {n: vec for (n, _), vec in zip(todo, new if new is not None else [])}
    rows = [fresh[n] if n in fresh else old[n][1] for n, _ in skills]
    dim = rows[0].shape[0] if rows else 0
    matrix = np.asarray(rows, dtype="<f4").reshape(len(rows), dim)
    with transaction(conn):
        meta.put_json(conn, VECTORS_KEY, {
            "backend": BACKEND, "model": MODEL, "dim": dim, "names": [n for n, _ in skills],
            "digests": [_digest(n, d) for n, d in skills], "data": base64.b64encode(matrix.tobytes()).decode("ascii")})
    return {"backend": BACKEND, "model": MODEL, "dim": dim, "skills": len(skills), "embedded": len(todo),
            "unchanged": len(skills) - len(todo), "removed": len(set(stored) - {n for n, _ in skills}),
            "seconds": round(time.monotonic() - started, 2)}


def _aligned(conn: Connection, index: SkillIndex) -> tuple[list[int], np.ndarray]:
    """The rows of ``index`` that have a vector of their current text, and those vectors."""
    raw = _stored_raw(conn)
    rows, vecs = [], []
    for i, (name, desc) in enumerate(zip(index.names, index.descriptions)):
        hit = raw.get(name)
        if hit is not None and hit[0] == _digest(name, desc):
            rows.append(i)
            vecs.append(hit[1])
    return rows, (np.asarray(vecs, dtype=np.float32) if vecs else np.zeros((0, 0), dtype=np.float32))


def vector_step(conn: Connection, index: SkillIndex, message: str, out: dict[str, Any], top: int) -> None:
    """Add the semantic channel's skill to the keyword result ``out`` (see the module text); on any
    failure the keyword result stays as it is, with ``vectors.fallback``."""
    rows, matrix = _aligned(conn, index)
    report: dict[str, Any] = {"used": False, "backend": BACKEND, "model": MODEL, "skills": len(rows),
                              "min_cosine": MIN_COSINE, "margin": MARGIN, "fallback": None}
    out["vectors"] = report
    if not rows:
        report["fallback"] = "no skill has a vector of its current text (run `kbindex skills embed`): keyword result"
        return
    try:
        client = _client(for_queries=True)
    except KbError as exc:   # a malformed setting (KBINDEX_LLM_TIMEOUT=abc, a plugin that fails): keyword result
        report["fallback"] = f"the local model's settings cannot be read ({exc.message}): keyword result"
        return
    try:
        query = client.embed([message.strip() or "."])[0]
    except LLMError as exc:
        report["fallback"] = f"the local model cannot embed the message ({exc.message}): keyword result"
        return
    finally:
        client.close()
    cosines = matrix @ query
    order = np.argsort(-cosines, kind="stable")[:2]
    best = float(cosines[order[0]])
    second = float(cosines[order[1]]) if len(order) > 1 else 0.0
    i = rows[int(order[0])]
    report.update(used=True, best=round(best, 4), best_skill=index.names[i], next=round(second, 4),
                  min_keyword_cosine=MIN_KEYWORD_COSINE, neighbour_cosine=NEIGHBOUR_COSINE,
                  neighbour_min_cosine=NEIGHBOUR_MIN_COSINE)
    out["method"] = "keyword+vectors"
    _veto(out, report, dict(zip((index.names[r] for r in rows), cosines.tolist())))
    if best >= MIN_COSINE and best - second >= MARGIN:
        _add_best(out, index, i, best, second, top)
    _add_neighbours(out, report, index, rows, matrix, cosines, top)


def _add_best(out: dict[str, Any], index: SkillIndex, i: int, best: float, second: float, top: int) -> None:
    """The clear winner of the cosines (skill ``i``) joins the match, or says it agrees with the keywords."""
    reason = f"cosine {best:.3f} to the skill's name and description (next skill {second:.3f})"
    for m in out["matched"]:
        if m["name"] == index.names[i]:
            m["source"], m["reason"] = "keyword+vectors", m["reason"] + "; " + reason
            return
    if len(out["matched"]) < top:
        out["matched"].append({"name": index.names[i], "description": index.descriptions[i],
                               "score": round(best, 4), "source": "vectors", "reason": reason})


def _add_neighbours(out: dict[str, Any], report: dict[str, Any], index: SkillIndex, rows: list[int],
                    matrix: np.ndarray, cosines: np.ndarray, top: int) -> None:
    """Add the near-equivalents of the matched skills, up to ``top`` in all: a skill whose vector's cosine to
    a matched skill's is at least :data:`NEIGHBOUR_COSINE` and whose cosine to the message is at least
    :data:`NEIGHBOUR_MIN_COSINE`, most similar to the message first (``pymupdf-pdf`` beside ``pdf``,
    ``xai-search`` beside ``grok-search``). ``report["neighbours"]`` lists the added ones. A message with no
    match gets none (the rule never turns a message needing no skill into a match)."""
    report["neighbours"] = []
    position = {index.names[r]: p for p, r in enumerate(rows)}
    anchors = [position[m["name"]] for m in out["matched"] if m["name"] in position]
    if not anchors or len(out["matched"]) >= top:
        return
    to_anchors = matrix @ matrix[anchors].T
    near, nearest = to_anchors.max(axis=1), to_anchors.argmax(axis=1)   # each skill's nearest matched skill
    taken = {m["name"] for m in out["matched"]}
    for p in np.argsort(-cosines, kind="stable"):
        if len(out["matched"]) >= top or cosines[p] < NEIGHBOUR_MIN_COSINE:
            break
        name = index.names[rows[int(p)]]
        if name in taken or near[p] < NEIGHBOUR_COSINE:
            continue
        anchor = index.names[rows[anchors[int(nearest[p])]]]
        out["matched"].append({"name": name, "description": index.descriptions[rows[int(p)]],
                               "score": round(float(cosines[p]), 4), "source": "vectors",
                               "reason": f"near-equivalent of {anchor} (cosine {float(near[p]):.3f} between the "
                                         f"skills; {float(cosines[p]):.3f} to the message)"})
        report["neighbours"].append(name)


def _veto(out: dict[str, Any], report: dict[str, Any], cosine: dict[str, float]) -> None:
    """Drop the keyword matches whose meaning is unrelated to the message (cosine below
    :data:`MIN_KEYWORD_COSINE`: a word shared by accident); ``report["keyword"]`` keeps every keyword match
    with its cosine, ``report["vetoed"]`` the dropped ones. A skill without a vector of its text stays."""
    report["keyword"] = [{"name": m["name"], "cosine": round(cosine[m["name"]], 4)}
                         for m in out["matched"] if m["name"] in cosine]
    report["vetoed"] = [m["name"] for m in out["matched"] if cosine.get(m["name"], 1.0) < MIN_KEYWORD_COSINE]
    out["matched"] = [m for m in out["matched"] if m["name"] not in report["vetoed"]]
