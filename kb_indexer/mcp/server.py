"""The MCP server: five tools and two kinds of resources over :class:`kb_indexer.api.KnowledgeBase`.

The index is opened per request (and closed after), so a long-running server sees ``sync``s made by
other processes, and concurrent requests (the SDK runs these synchronous tools in worker threads) each
have their own connection: a new SQLite one, or on PostgreSQL one lent by the pool the server holds
(:meth:`KbMCPServer.serving`; at most 8 server connections however many requests run). Every tool result fits about ``paging.BUDGET`` estimated tokens and
carries ``next_cursor`` when there is more (a cursor is bound to the arguments of its call, see
:mod:`kb_indexer.mcp.paging`). Resources (:mod:`kb_indexer.mcp.resources`) are listed in pages and read in
worker threads too. Errors of kbindex (bad arguments, unknown document or
keyword) become MCP tool errors. A read-only server (:class:`Served`) has no kb_feedback, records no query and
opens the index read-only. Over HTTP with named tokens, each tool call and resource read asks on behalf of the
name of the token its request presented (:func:`_asked_by`), so what it records names that asker. Nothing here
writes to stdout: stdio belongs to the protocol.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
from typing import Annotated, Any, Callable, Iterator, Literal, Mapping, Optional, ParamSpec, TypeVar

import anyio.to_thread
from pydantic import ConfigDict, ValidationError, model_validator
from mcp.server import MCPServer
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, ListResourcesResult, PaginatedRequestParams, TextContent
from mcp_types import Resource as MCPResource
from mcp_types import ResourceTemplate as MCPResourceTemplate
from mcp_types import Tool as MCPTool
from mcp_types import ToolAnnotations

from kb_indexer import __version__
from kb_indexer.api import KnowledgeBase, QueryOptions
from kb_indexer.config import DbArg
from kb_indexer.errors import KbError, UsageError
from kb_indexer.mcp import client_text, outputs, paging, resources
from kb_indexer.mcp.early import INSTRUCTIONS, NAME, READ_ONLY_INSTRUCTIONS
from kb_indexer.mcp.access import ASKER
from kb_indexer.results.common import TypedDict
from kb_indexer.mcp.paging import clip, make_cursor, page_items, page_text, parse_cursor

_RESULT_FIELDS = tuple(outputs.QueryHit.__annotations__)
_RELATED_FIELDS = tuple(outputs.Related.__annotations__)
_SKILL_FIELDS = tuple(outputs.Skill.__annotations__)
Method = Literal["auto", "keyword", "fulltext", "semantic", "hybrid"]
# A tool returns its CallToolResult (see _result); the SDK checks the structured part against the model.
QueryOut = Annotated[CallToolResult, outputs.QueryOut]
DocumentOut = Annotated[CallToolResult, outputs.DocumentOut]
SimilarOut = Annotated[CallToolResult, outputs.SimilarOut]
FeedbackOut = Annotated[CallToolResult, outputs.FeedbackOut]
SkillsOut = Annotated[CallToolResult, outputs.SkillsOut]
P = ParamSpec("P")
R = TypeVar("R")
READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
#: How a read-only server's refusals begin (``kbindex mcp --read-only``).
READ_ONLY_REFUSAL = "read-only server (kbindex mcp --read-only)"
#: Writes whose repetition changes nothing more (feedback is one mark per question and document).
IDEMPOTENT_WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                    open_world_hint=False)


@dataclasses.dataclass(frozen=True)
class Served:
    """The index a server serves: ``db`` (None: found again per request, as the CLI finds it); ``read_only``
    (``kbindex mcp --read-only``): opened read-only, nothing recorded, no kb_feedback tool, no skill sessions."""

    db: DbArg = None
    read_only: bool = False


def _served(db: Any) -> Served:
    return db if isinstance(db, Served) else Served(db)


@contextlib.contextmanager
def _index(db: Any) -> Iterator[KnowledgeBase]:
    """The index for one request (``db``: a :class:`Served`, or the index itself). A client's paths are relative
    to the knowledge-base root (as the paths it is given), never to the server's working directory."""
    served = _served(db)
    with KnowledgeBase.open(served.db, read_only=served.read_only) as kb:
        kb.paths_from_cwd = False
        yield kb


#: On a kbindex error raised with the index open: its knowledge-base root (a folder a client is not told).
_ROOT = "_kbindex_root"


def _told(exc: KbError, db: Any, sent: object = ()) -> str:
    """What a client is told of a kbindex error: its message without the server's own index file and folders
    (:mod:`kb_indexer.mcp.client_text`), but for what it ``sent``."""
    return client_text.hidden(str(exc), client_text.places(_served(db).db, getattr(exc, _ROOT, None)),
                              client_text.strings(sent))


@contextlib.contextmanager
def _opened(db: Any) -> Iterator[KnowledgeBase]:
    """The index for one tool call; a kbindex error goes to the tool's wrapper (:func:`_tool`) knowing the root."""
    root = None
    try:
        with _index(db) as kb:
            root = kb.kb_root
            yield kb
    except KbError as exc:
        setattr(exc, _ROOT, root)
        raise


def _tool(fn: Callable[P, R], db: Any) -> Callable[P, R]:
    """A tool function whose kbindex errors (with the index open, or arguments checked before, such as a cursor)
    are tool errors: the message, not a traceback, naming none of the server's folders."""
    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except KbError as exc:
            raise ToolError(_told(exc, db, (args, kwargs))) from exc
    return wrapper


def _pick(item: Mapping[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    return {k: item[k] for k in fields if k in item}


def _compact(result: Mapping[str, Any]) -> outputs.QueryHit:
    out = _pick(result, _RESULT_FIELDS)
    out["summary"] = clip(result.get("summary"), 300)
    return out  # type: ignore[return-value]


class _Fallback(TypedDict, total=False):
    fallback: str | None


def _fallback(llm: Any) -> _Fallback:
    """``{"fallback": "<kind>: <why>"}`` when an LLM was asked for but did not judge (clipped), else nothing:
    a deterministic answer is never passed off as the LLM's."""
    if not isinstance(llm, dict) or llm.get("used"):
        return {}
    why = llm.get("reason") or llm.get("error")
    return {"fallback": clip(f"{llm.get('fallback') or 'none'}: {why}" if why else llm.get("fallback"), 200)}


def _semantic_fallback(asked: str, semantic: Any) -> str | None:
    """Why the vectors of a semantic or hybrid query asked for by name were not used (no vectors in the
    index, backend down), or None: the query then ran on keywords and full text only."""
    if asked not in ("semantic", "hybrid") or not isinstance(semantic, dict) or semantic.get("used"):
        return None
    return str(clip(f"lexical (no vectors used): {semantic.get('error') or 'no embedding model available'}", 200))


def _query_fallback(asked: str, out: Mapping[str, Any], context: Optional[str]) -> _Fallback:
    """``fallback`` of a kb_query: the semantic fallback and the context LLM's, each when it happened."""
    parts = [_semantic_fallback(asked, out.get("semantic")),
             _fallback(out.get("llm") if context else None).get("fallback")]
    said = [p for p in parts if p]
    return {"fallback": "; ".join(said)} if said else {}


def kb_query_impl(db: Any, question: str, keywords: Optional[list[str]], method: Method, limit: int,
                  context: Optional[str], cursor: Optional[str]) -> outputs.QueryOut:
    scope = ["kb_query", question, keywords, method, limit, context]
    offset, tag = parse_cursor(cursor, scope)
    # A continuation (its cursor made for these very arguments) re-runs the query without recording
    # it again, and keeps the first query_id. A read-only server records none (query_id null).
    options = QueryOptions(method=method, limit=limit, context=context, record=not cursor and not _served(db).read_only)
    with _opened(db) as kb:
        out = kb.query(question, keywords, options)
        stale = None if cursor else kb.stale_note()
    query_id = out.get("query_id") if not cursor else tag
    page, nxt = page_items([_compact(r) for r in out["results"]], offset)
    q = out["query"]
    result: outputs.QueryOut = {
        "query_id": query_id, "keywords": q["keywords"], "expanded_keywords": q["expanded_keywords"],
        "method": q["method"], "total": out["total"], "results": page,
        "next_cursor": None if nxt is None else make_cursor(nxt, scope, query_id)}
    if q.get("expansions_omitted"):
        result["expansions_omitted"] = q["expansions_omitted"]
    fallback = _query_fallback(method, out, context).get("fallback")
    if fallback:
        result["fallback"] = fallback
    if stale and stale["checked"]:
        result["stale"] = stale["message"]
    return result


def kb_get_impl(db: Any, path: str, cursor: Optional[str]) -> outputs.DocumentOut:
    offset, _ = parse_cursor(cursor, ["kb_get", path])
    with _opened(db) as kb:
        info = kb.show(path)
        body = kb.read(path)["text"]
    text, nxt = page_text(body, offset)
    out: outputs.DocumentOut = {"filepath": info["filepath"], "title": info["title"], "offset": offset,
                                "total_chars": len(body), "text": text,
                                "next_cursor": None if nxt is None else make_cursor(nxt, ["kb_get", path])}
    if offset == 0:
        out["keywords"] = [k["keyword"] for k in info["keywords"]][:40]
    return out


def kb_similar_impl(db: Any, keyword: str, user_context: Optional[str],
                    cursor: Optional[str]) -> outputs.SimilarOut:
    scope = ["kb_similar", keyword, user_context]
    offset, _ = parse_cursor(cursor, scope)
    with _opened(db) as kb:   # a page holds fewer than BUDGET items (each costs a token or more)
        out = kb.similar(keyword, user_context=user_context, limit=offset + paging.BUDGET)
    items = [_pick(item, _RELATED_FIELDS) for item in out.get("similar_keywords") or []]
    page, nxt = page_items(items, offset)
    head = {"keyword": out["keyword"], "count": out["total"]}
    if user_context is not None:
        head["user_context"] = out.get("user_context")
    return {**head, "similar_keywords": page, **_fallback(out.get("llm")),  # type: ignore[typeddict-item]
            "next_cursor": None if nxt is None else make_cursor(nxt, scope)}


def kb_feedback_impl(db: Any, query_id: int, helpful: list[str], not_helpful: list[str]) -> outputs.FeedbackOut:
    with _opened(db) as kb:
        out = kb.learning.feedback(query_id, helpful, not_helpful)
    result: outputs.FeedbackOut = {"query_id": out["query_id"], "recorded": len(out.get("recorded") or [])}
    if out.get("not_in_results"):
        result["not_in_results"] = out["not_in_results"]
    return result


def skills_match_impl(db: Any, message: str, session: Optional[str], cursor: Optional[str]) -> outputs.SkillsOut:
    if session is not None and _served(db).read_only:
        raise UsageError(f"{READ_ONLY_REFUSAL}: skills_match tracks no session here (call it without session)")
    scope = ["skills_match", message, session]
    offset, _ = parse_cursor(cursor, scope)
    with _opened(db) as kb:
        out = kb.skills.match(message, session=session)
    matched = [{**_pick(m, _SKILL_FIELDS), "description": clip(m.get("description"), 300)}
               for m in out.get("matched") or []]
    page, nxt = page_items(matched, offset)
    turn = out.get("session")
    sess: dict[str, Any] = dict(turn) if isinstance(turn, dict) else {}
    why = out.get("fallback_reason")
    fallback: _Fallback = {"fallback": clip(why, 200)} if why else {}
    return {"matched": page, "method": out.get("method"), **fallback,
            "loaded": sess.get("loaded") or [], "evicted": sess.get("evicted") or [],
            "next_cursor": None if nxt is None else make_cursor(nxt, scope)}


def _result(data: Any) -> CallToolResult:
    """The structured result, and its text copy for clients that read only text, in compact JSON (the SDK's
    own copy is indented: a quarter more tokens for nothing)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _register_tools(server: MCPServer, db: Served) -> None:
    def kb_query(question: str, keywords: Optional[list[str]] = None, method: Method = "auto", limit: int = 10,
                 context: Optional[str] = None, cursor: Optional[str] = None) -> QueryOut:
        """Search the knowledge base: ranked documents with snippets and provenance, and a query_id."""
        return _result(kb_query_impl(db, question, keywords, method, limit, context, cursor))

    def kb_get(path: str, cursor: Optional[str] = None) -> DocumentOut:
        """Read one document's text (paged: pass next_cursor as cursor)."""
        return _result(kb_get_impl(db, path, cursor))

    def kb_similar(keyword: str, user_context: Optional[str] = None, cursor: Optional[str] = None) -> SimilarOut:
        """Keywords related to a keyword, optionally only those fitting user_context."""
        return _result(kb_similar_impl(db, keyword, user_context, cursor))

    def kb_feedback(query_id: int, helpful: Optional[list[str]] = None,
                    not_helpful: Optional[list[str]] = None) -> FeedbackOut:
        """Say which documents of a kb_query (by path) helped; `kbindex learn` uses it."""
        return _result(kb_feedback_impl(db, query_id, helpful or [], not_helpful or []))

    def skills_match(message: str, session: Optional[str] = None, cursor: Optional[str] = None) -> SkillsOut:
        """The skills a chat message needs (a session id tracks a conversation)."""
        return _result(skills_match_impl(db, message, session, cursor))

    tools: list[tuple[Callable[..., CallToolResult], ToolAnnotations]] = [
        (kb_query, WRITES), (kb_get, READ_ONLY), (kb_similar, READ_ONLY), (kb_feedback, IDEMPOTENT_WRITES),
        (skills_match, WRITES)]
    if db.read_only:   # no kb_feedback (it only records); the others then write nothing
        tools = [(fn, READ_ONLY) for fn, _ in tools if fn is not kb_feedback]
    for fn, notes in tools:
        server.add_tool(_tool(fn, db), annotations=notes)
        _forbid_unknown_arguments(server, fn.__name__)


def _forbid_unknown_arguments(server: MCPServer, name: str) -> None:
    """An argument the tool does not have (a typo such as ``limt``) is a tool error, not silently dropped:
    the SDK's argument model ignores extras, so the tool gets a subclass that forbids them, and its input
    schema says so (``additionalProperties: false``). The subclass is strict too: a value of another JSON
    type than the schema's (``true`` for an integer) is a tool error, not converted."""
    # The SDK has no public hook for this: an SDK whose internals differ keeps its own (lenient) rule
    # rather than failing to start.
    manager = getattr(server, "_tool_manager", None)
    tool = manager.get_tool(name) if manager is not None and hasattr(manager, "get_tool") else None
    metadata = getattr(tool, "fn_metadata", None)
    if tool is None or metadata is None or not hasattr(metadata, "arg_model"):
        return
    base = metadata.arg_model

    integers = {name for name, field in base.model_fields.items() if field.annotation is int}

    class Strict(base):  # type: ignore[valid-type,misc]
        # merged with the base model's config by pydantic; strict: each value of its own JSON type (a boolean
        # or "1" is not a query id, a number is not a question)
        model_config = ConfigDict(extra="forbid", strict=True)

        @model_validator(mode="before")
        @classmethod
        def _whole_numbers(cls, data: Any) -> Any:
            """10.0 is an integer in JSON Schema (the input schema's "integer"): taken as 10."""
            if isinstance(data, dict):
                return {k: int(v) if k in integers and type(v) is float and v.is_integer() else v
                        for k, v in data.items()}
            return data

    metadata.arg_model = Strict
    tool.parameters = {**tool.parameters, "additionalProperties": False}


def argument_problems(exc: ValidationError) -> str:
    """What is wrong with a tool call's arguments, one clause each: ``argument 'limit': should be an integer, got
    "5"``; ``unknown argument 'limt'``; ``missing argument 'question'``."""
    out = []
    for err in exc.errors(include_url=False)[:10]:
        name = ".".join(str(part) for part in err["loc"]) or "arguments"
        if err["type"] == "extra_forbidden":
            out.append(f"unknown argument {name!r}")
        elif err["type"] == "missing":
            out.append(f"missing argument {name!r}")
        else:
            got = json.dumps(err.get("input"), default=str)
            got = got if len(got) <= 40 else got[:37] + "..."
            out.append(f"argument {name!r}: {err['msg'][0].lower()}{err['msg'][1:]}, got {got}")
    return "; ".join(out) + " (the tool's input schema lists its arguments and their types)"


def _asked_by(context: Any) -> contextlib.AbstractContextManager[None]:
    """While a request is served: on behalf of the name of the token its HTTP request presented
    (:data:`kb_indexer.mcp.access.ASKER`; over stdio, or without tokens, the server's own asker). Set in the
    request's own task, so the worker thread running it (a copy of its context) and the connection it opens
    carry the name, and concurrent requests never see each other's."""
    try:
        request = context.request_context.request
    except (AttributeError, ValueError):   # no request (a call made outside one)
        request = None
    scope = getattr(request, "scope", None)
    name = scope.get(ASKER) if isinstance(scope, Mapping) else None
    return KnowledgeBase.on_behalf(name if isinstance(name, str) else None)


class KbMCPServer(MCPServer):
    """MCPServer whose resources come from the index on each request (:mod:`kb_indexer.mcp.resources`):
    two resource templates, and ``resources/list`` in pages with a cursor. The blocking work (SQLite, files)
    runs in a worker thread with its own connection, never on the event loop."""

    def __init__(self, db: Served, **kwargs: Any):
        super().__init__(**kwargs)
        self._db = db

    def serving(self) -> contextlib.AbstractContextManager[None]:
        """Hold for the server's life: on PostgreSQL, requests share a small pool of connections
        (:meth:`KnowledgeBase.serving`) instead of opening one each."""
        return KnowledgeBase.serving(self._db.db)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """The SDK's call; arguments the tool's schema refuses are named one by one in plain words (the SDK
        shows pydantic's report: model name, error types and a documentation URL)."""
        try:
            with _asked_by(context):
                return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if not isinstance(exc.__cause__, ValidationError) or type(exc) is not ToolError:
                raise
            raise ToolError(f"Error executing tool {name}: {argument_problems(exc.__cause__)}") from exc.__cause__

    async def list_tools(self) -> list[MCPTool]:
        """The catalog with compacted schemas (see :func:`outputs.compact_schema`): it is read before every
        conversation, so each token counts."""
        tools = await super().list_tools()
        return [t.model_copy(update={"input_schema": outputs.compact_schema(t.input_schema),
                                     "output_schema": outputs.compact_schema(t.output_schema)}) for t in tools]

    async def list_resource_templates(self) -> list[MCPResourceTemplate]:
        return [MCPResourceTemplate(**t) for t in resources.templates()]

    async def _handle_list_resources(self, ctx: Any, params: PaginatedRequestParams | None) -> ListResourcesResult:
        """``resources/list`` with the SDK's pagination (``cursor`` in, ``nextCursor`` out): MCPServer's
        own handler answers every resource at once. A cursor not made here is invalid params."""
        try:
            page, nxt = await anyio.to_thread.run_sync(self._resource_page, params.cursor if params else None)
        except KbError as exc:
            raise MCPError(code=INVALID_PARAMS, message=_told(exc, self._db, params.cursor if params else ())) from exc
        return ListResourcesResult(resources=page, next_cursor=nxt)

    async def list_resources(self) -> list[MCPResource]:
        """The first page (``resources/list`` pages: see :meth:`_handle_list_resources`)."""
        return (await anyio.to_thread.run_sync(self._resource_page, None))[0]

    def _resource_page(self, cursor: str | None) -> tuple[list[MCPResource], str | None]:
        with _opened(self._db) as kb:
            page, nxt = resources.list_page(kb, cursor)
        return [MCPResource(**r) for r in page], nxt

    async def read_resource(self, uri: Any, context: Any = None) -> list[ReadResourceContents]:
        with _asked_by(context):
            text = await anyio.to_thread.run_sync(self._read, str(uri))
        mime = "application/json" if str(uri) == resources.REPORT_URI else "text/markdown"
        return [ReadResourceContents(content=text, mime_type=mime)]

    def _read(self, uri: str) -> str:
        try:
            with _opened(self._db) as kb:
                return resources.read(kb, uri)
        except KbError as exc:
            raise ResourceNotFoundError(_told(exc, self._db, uri)) from exc


def build_server(db: DbArg = None, *, read_only: bool = False) -> KbMCPServer:
    """The kbindex MCP server over the index ``db`` (None: the usual lookup, as in the CLI); ``read_only``: see
    :class:`Served`."""
    served = Served(db, read_only)
    server = KbMCPServer(served, name=NAME, version=__version__, log_level="WARNING",
                         instructions=READ_ONLY_INSTRUCTIONS if read_only else INSTRUCTIONS)
    _register_tools(server, served)
    return server
