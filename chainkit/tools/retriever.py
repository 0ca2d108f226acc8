"""ToolRetriever: picks the few tools relevant to a question, so that a model with hundreds of
tools is shown only those.

By default it ranks tools by BM25 over their name, description and argument names
(`chainkit._search.bm25`, with the tokenizer of `chainkit._search.terms`: English words, camelCase
and snake_case names, Chinese as character bigrams), with no dependency. Given an `embedder`
it also ranks them by the cosine similarity of embeddings, and fuses the two rankings by
reciprocal rank fusion: each tool scores the sum of 1 / (60 + its rank) over both rankings
(Cormack et al., 2009). Ranks, not scores, are fused, so BM25's unbounded scores and cosines
need no common scale, and a tool that either ranking puts first comes out near the top.

Near copies of one operation (the same tool from two servers, or written twice by different
APIs) are offered once among the first: the others come after the distinct candidates
(`chainkit._search.near_copies`). Tools that their sources name alike (MCP tools of one
`remote_name` from servers joined with prefixes) need be less alike to count as copies.
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Iterable, Sequence
from itertools import chain, zip_longest
from numbers import Real
from typing import Any

from chainkit._search.bm25 import LexicalIndex
from chainkit._search.names import NameWords
from chainkit._search.near_copies import CountedTerms, counted_terms, distinct_first
from chainkit._search.requests import requests, without_phrasing
from chainkit._search.terms import terms, tokens
from chainkit._search.vectors import dot, scaled_to_unit
from chainkit._stop import to_thread
from chainkit._text import counted, described
from chainkit.schema.embedder import Embedder
from chainkit.tools.base import Tool
from chainkit.tools.errors import ToolConfigError, ToolTypeError
from chainkit.tools.toolset import Toolset

RRF_K = 60
"""The constant of reciprocal rank fusion: how little the first ranks count more than the next."""
_MIN_CANDIDATES = 50
"""How deep each ranking is read before fusion, at least."""
NAME_WEIGHT = 3
"""How many times a word of a tool's name counts, against once for a word of its description
or of its arguments' names and descriptions: the name says the operation (tuned on the dev half
of bench/tool_retrieval_bfcl.py)."""
REQUEST_CANDIDATES = 10
"""How many of the best tools for a whole question each of its requests ranks again (with the
tools whose names hold the most of the request's words)."""
COPY_CANDIDATES = 3
"""How many candidates past `top_k` a selection reads, for the near copies it moves back
(`chainkit._search.near_copies`) to give their places to."""


class ToolRetriever:
    """Selects, for a query, the `top_k` tools that match it best, after the tools of
    `always_include` (names or tools), which every selection starts with.

    Without an embedder a tool must share a word (or a pair of Chinese characters) with the
    query to be selected, so a selection may hold fewer than `top_k` tools, and an empty
    query selects only `always_include`. With one, every tool has a rank and `top_k` are
    always selected.

    Tools whose texts are near-identical (the terms they are found by, counted, at least
    `near_copies.NEAR_COPY_SIMILARITY` alike) are one operation written twice, such as
    `get_current_weather` from two MCP servers joined with prefixes (`a_get_current_weather`,
    `b_get_current_weather`): the best-ranked copy is selected, and the others (and the copies
    of an always-included tool) only after the distinct tools that rank next, so that the
    copies do not take the places of the tools for the rest of a question. Tools that their
    sources give the same name (MCP tools of one `remote_name`, from servers joined with
    prefixes) are copies when their texts are at least `near_copies.SAME_OPERATION_SIMILARITY`
    alike: the servers may describe one operation in their own words. A copy is moved
    back, never dropped: with few tools matching, it is still selected. Two look-alike tools
    that are each the best for one of a question's requests ("soccer scores for Arsenal, and
    basketball scores for the Lakers") are both selected.

    Tools are added and removed one by one (`add`, `remove`), without rebuilding the index;
    `select` may run in several threads at once, and while tools are added. Selecting among
    1,000 tools takes well under a millisecond without an embedder (`bench/tool_retrieval.py`);
    with one, the query is embedded and compared with every tool, in pure Python: about 30 ms
    more for 1,000 tools of 1,536 dimensions on Python 3.11, less on 3.12+ (`math.sumprod`).
    """

    def __init__(
        self,
        tools: Iterable[Tool],
        *,
        top_k: int = 5,
        always_include: Iterable[str | Tool] = (),
        embedder: Embedder | None = None,
    ) -> None:
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ToolConfigError(
                f"top_k must be a whole number of tools, at least 1; got {top_k!r}"
            )
        if embedder is not None and not isinstance(embedder, Embedder):
            raise ToolTypeError(
                "embedder must have embed_documents(texts) and embed_query(text), such as "
                f"llms.OpenAIEmbeddings(); got {type(embedder).__name__}"
            )
        self._top_k = top_k
        self._embedder = embedder
        self._write_lock = threading.Lock()
        self._index = LexicalIndex[str]()
        self._names = NameWords[str]()
        # Replaced, never changed in place, so that `select` reads them without a lock.
        self._toolset = Toolset()
        self._vectors: dict[str, list[float]] = {}
        self._counted_terms: dict[str, CountedTerms] = {}
        self._always: tuple[str, ...] = ()
        self._add(tools)
        always = [self._tool_named(tool, "always_include").name for tool in always_include]
        self._always = tuple(dict.fromkeys(always))

    def __repr__(self) -> str:
        embedder = "" if self._embedder is None else f", embedder={type(self._embedder).__name__}"
        tools = counted(len(self._toolset), "tool")
        return f"ToolRetriever({tools}, top_k={self._top_k}{embedder})"

    def __len__(self) -> int:
        return len(self._toolset)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._toolset.find(name) is not None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_write_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._write_lock = threading.Lock()

    @property
    def top_k(self) -> int:
        return self._top_k

    @property
    def tools(self) -> list[Tool]:
        """Every tool it selects from, in the order they were added."""
        return list(self._toolset)

    @property
    def always_include(self) -> list[Tool]:
        return self._listed(self._toolset, self._always)

    def add(self, *tools: Tool) -> None:
        """Adds tools to select from; raises, adding none, as a `Toolset` refuses them: a tool
        that is not a Tool, has no name or description, or whose name (ignoring case) a tool
        already has."""
        self._add(tools)

    def _add(self, tools: Iterable[Tool]) -> None:
        current = self._toolset
        checked = list(current.adding(tools))[len(current) :]
        if not checked:
            return
        vectors: dict[str, list[float]] = {}
        if self._embedder is not None:
            found = self._embedder.embed_documents([_embedded_text(tool) for tool in checked])
            vectors = self._checked_vectors(found, checked)
        with self._write_lock:
            # Checked again: another thread may have added one meanwhile.
            self._toolset = self._toolset.adding(checked)
            self._vectors = {**self._vectors, **vectors}
            named = {tool.name: tuple(terms(tool.name)) for tool in checked}
            documents = {tool.name: _document(tool, named[tool.name]) for tool in checked}
            added = {
                tool.name: counted_terms(documents[tool.name], _operation(tool)) for tool in checked
            }
            self._counted_terms = {**self._counted_terms, **added}
            for name, words in documents.items():
                self._index.add(name, words)
            self._names.add(named)

    def remove(self, *tools: str | Tool) -> None:
        """Removes tools, given by name or as the tool; raises, removing none, for one it does
        not have."""
        with self._write_lock:
            found = [self._tool_named(tool, "remove") for tool in tools]
            for tool in found:
                self._index.remove(tool.name)
            gone = {tool.name for tool in found}
            self._names.remove(gone)
            self._toolset = self._toolset.without(found)
            self._vectors = {n: v for n, v in self._vectors.items() if n not in gone}
            self._counted_terms = {n: v for n, v in self._counted_terms.items() if n not in gone}
            self._always = tuple(name for name in self._always if name not in gone)

    def select(self, query: str) -> list[Tool]:
        """The tools of `always_include`, then the `top_k` others that match `query` best, best
        first."""
        query = _checked_query(query)
        if self._embedder is None or not query.strip():
            return self._ranked(query, None)
        return self._ranked(query, self._embedder.embed_query(query))

    def select_by_words(self, query: str) -> list[Tool]:
        """`select` by the words of `query` alone, with no call to the embedder: cheap enough
        to run at every step of an agent, and selecting only tools that share words with it."""
        return self._ranked(_checked_query(query), None)

    async def aselect(self, query: str) -> list[Tool]:
        """`select` for async code: the embedder's `aembed_query` is awaited when it has one,
        else its `embed_query` runs in a worker thread."""
        query = _checked_query(query)
        embedder = self._embedder
        if embedder is None or not query.strip():
            return self._ranked(query, None)
        embed = getattr(embedder, "aembed_query", None)
        if callable(embed):
            vector = await embed(query)
        else:
            vector = await to_thread("embedder", embedder.embed_query, query)
        return self._ranked(query, vector)

    def _ranked(self, query: str, query_vector: object) -> list[Tool]:
        toolset, always, counted = self._toolset, self._always, self._counted_terms
        # The always-included may rank among the best, and near copies are moved back.
        wanted = self._top_k + len(always) + COPY_CANDIDATES
        asked = [tokens(without_phrasing(part)) for part in requests(query)]
        question = asked[0] if len(asked) == 1 else _union(asked)
        bests: set[str] = set()
        if query_vector is None:
            depth = wanted if len(asked) == 1 else max(wanted, REQUEST_CANDIDATES)
            ranking = [name for name, _ in self._index.search(question, depth)]
        else:
            depth = max(wanted, _MIN_CANDIDATES)
            lexical = [name for name, _ in self._index.search(question, depth)]
            ranking = _fused(lexical, self._dense_ranking(query_vector, depth))
        if len(asked) > 1:
            ranking, bests = self._by_request(ranking, asked, wanted)
        # Looked up once, in the toolset read above: a tool may be added or removed meanwhile.
        found = {
            n: tool for n in ranking if n not in always and (tool := toolset.find(n)) is not None
        }
        # A request's own best is never moved back: two requests may ask for look-alike
        # operations (soccer scores, basketball scores), and each needs its own.
        chosen = distinct_first(list(found), counted, self._top_k, always, bests)
        return [*self._listed(toolset, always), *(found[n] for n in chosen[: self._top_k])]

    def _by_request(
        self, ranking: list[str], asked: list[dict[str, float]], depth: int
    ) -> tuple[list[str], set[str]]:
        """The question's `ranking` interleaved with each request's own ranking of the
        question's best `REQUEST_CANDIDATES` and of the tools whose names hold the most of its
        words (two at least, `NameWords.naming_most`): the best tool for each request comes
        before the second best for any, so that one request does not fill every slot, and a
        short request's tool is a candidate even when a long request fills the question's
        best. The requests take turns by their best tool's score, so that a piece naming no
        operation ("I have a question") comes after those that do. Also returns the names of
        those bests."""
        candidates = dict.fromkeys(ranking[:REQUEST_CANDIDATES])
        for request in asked:
            candidates.update(dict.fromkeys(self._names.naming_most(request)))
        each = [part for part in self._index.search_each(asked, depth, candidates) if part]
        each.sort(key=_best_score, reverse=True)
        rankings = [[name for name, _ in part] for part in each]
        bests = {names[0] for names in rankings}
        return _interleaved([ranking, *rankings]), bests

    @staticmethod
    def _listed(toolset: Toolset, names: Iterable[str]) -> list[Tool]:
        """The tools of `toolset` named `names` (read once: it may be replaced meanwhile)."""
        found = (toolset.find(name) for name in names)
        return [tool for tool in found if tool is not None]

    def _dense_ranking(self, query_vector: object, depth: int) -> list[str]:
        vectors = self._vectors
        dimensions = len(next(iter(vectors.values()))) if vectors else None
        unit = _unit(query_vector, "embed_query", dimensions)
        scored = heapq.nlargest(depth, vectors.items(), key=lambda item: dot(unit, item[1]))
        return [name for name, _ in scored]

    def _checked_vectors(self, found: object, tools: list[Tool]) -> dict[str, list[float]]:
        if not isinstance(found, Sequence) or len(found) != len(tools):
            got = counted(len(found), "vector") if isinstance(found, Sequence) else described(found)
            raise ToolConfigError(
                f"embedder.embed_documents returned {got} for {counted(len(tools), 'text')}"
            )
        existing = next(iter(self._vectors.values()), None)
        dimensions = len(existing) if existing is not None else None
        vectors: dict[str, list[float]] = {}
        for tool, vector in zip(tools, found, strict=True):
            vectors[tool.name] = unit = _unit(vector, "embed_documents", dimensions)
            dimensions = len(unit)
        return vectors

    def _tool_named(self, tool: str | Tool, where: str) -> Tool:
        name = tool.name if isinstance(tool, Tool) else tool
        if not isinstance(name, str):
            raise ToolTypeError(f"{where} takes tool names or tools, got {tool!r}")
        found = self._toolset.find(name)
        if found is None:
            raise ToolConfigError(f"{where}: the retriever has no tool named {name!r}")
        return found


def _checked_query(query: object) -> str:
    if not isinstance(query, str):
        raise ToolTypeError(f"the query must be a str, got {type(query).__name__}")
    return query


def _argument_names(tool: Tool) -> list[str]:
    """The names of the arguments in the tool's JSON schema, if it has a readable one."""
    return [str(name) for name in _arguments(tool)]


def _arguments(tool: Tool) -> dict[Any, Any]:
    parameters = tool.parameters
    properties = parameters.get("properties") if isinstance(parameters, dict) else None
    return properties if isinstance(properties, dict) else {}


def _argument_descriptions(tool: Tool) -> list[str]:
    fields = _arguments(tool).values()
    about = (field.get("description") for field in fields if isinstance(field, dict))
    return [text for text in about if isinstance(text, str)]


def _document(tool: Tool, name_terms: Sequence[str]) -> list[str]:
    """The terms a tool is found by: its name's (`name_terms`), weighted as the operation, then
    its description and its arguments' names and descriptions (the evidence)."""
    evidence = " ".join((tool.description, *_argument_evidence(tool)))
    return [term for term in name_terms for _ in range(NAME_WEIGHT)] + list(terms(evidence))


def _argument_evidence(tool: Tool) -> list[str]:
    """The names and descriptions of a tool's arguments; none for a tool that takes the one
    string every plain `Tool` takes, whose schema says nothing of the tool."""
    if type(tool).parameters is Tool.parameters:
        return []
    return [*_argument_names(tool), *_argument_descriptions(tool)]


def _operation(tool: Tool) -> str:
    """The name the tool's source gives it: an MCPTool's `remote_name` (its `name` may have the
    prefix of the MCPTools that listed it), or that of any tool with a `remote_name` string;
    else its name."""
    remote_name = getattr(tool, "remote_name", None)
    return remote_name if isinstance(remote_name, str) else tool.name


def _embedded_text(tool: Tool) -> str:
    arguments = ", ".join(_argument_names(tool))
    return f"{tool.name}: {tool.description}" + (f" (arguments: {arguments})" if arguments else "")


def _unit(vector: object, source: str, dimensions: int | None) -> list[float]:
    """`vector` scaled to length 1 (a zero vector stays zero), once it is a list of finite
    numbers of the expected length."""
    if (
        not isinstance(vector, Sequence)
        or isinstance(vector, str)
        or not vector
        or not all(isinstance(x, Real) and not isinstance(x, bool) for x in vector)
    ):
        raise ToolConfigError(
            f"embedder.{source} must return vectors of numbers, got {vector!r:.80}"
        )
    if dimensions is not None and len(vector) != dimensions:
        raise ToolConfigError(
            f"embedder.{source} returned a vector of {counted(len(vector), 'number')} where "
            f"the others have {dimensions}"
        )
    try:
        numbers = [float(x) for x in vector]
    except OverflowError:
        raise ToolConfigError(
            f"embedder.{source} returned a number too large for a float"
        ) from None
    scaled = scaled_to_unit(numbers)
    if scaled is None:
        raise ToolConfigError(f"embedder.{source} returned a vector that is not finite")
    return scaled


def _union(parts: list[dict[str, float]]) -> dict[str, float]:
    """The terms of all the parts, each with its highest weight."""
    union: dict[str, float] = {}
    for part in parts:
        for term, weight in part.items():
            union[term] = max(weight, union.get(term, 0.0))
    return union


def _best_score(scored: list[tuple[str, float]]) -> float:
    return scored[0][1]


def _interleaved(rankings: list[list[str]]) -> list[str]:
    """The first of each ranking, then the second of each, and so on, each name once."""
    merged = dict.fromkeys(chain.from_iterable(zip_longest(*rankings)))
    merged.pop(None, None)  # the filler of the shorter rankings
    return list(merged)


def _fused(*rankings: list[str]) -> list[str]:
    """Reciprocal rank fusion of the rankings (best first); a tie keeps the earlier ranking's
    order."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, name in enumerate(ranking, 1):
            scores[name] = scores.get(name, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores, key=scores.__getitem__, reverse=True)
