"""Answer chains: a question in, an answer out that cites the retrieved chunks it rests on,
each citation checked (LangChain's create_retrieval_chain and create_stuff_documents_chain,
langchaingo's RetrievalQA, StuffDocuments and MapReduceDocuments).

The chain retrieves the chunks for the question, shows them to the model under their ids
(`documents.as_context`), asks for an answer that cites them as `[id]`, and reads the
citations back: a cited id that names no chunk the model was shown is reported as invented
(in the outputs, to the callbacks as a `citations` event, and as InventedCitationError with
`strict=True`), and so is an answer that cites nothing (UncitedAnswerError).

- "stuff": the chunks that fit `token_budget`, best first (a chunk too big for what is left
  is passed over for the smaller ones after it), in one prompt.
- "map_reduce": the chunks in groups that each fit `token_budget`; each group is read into
  notes that keep their citations (at most `max_concurrency` groups at a time), and the
  notes into the answer. Notes that together do not fit the budget are first read, group by
  group, into fewer notes (LangChain's collapse), until they fit or no two fit together.
  Chunks that all fit one group are answered from at once, as "stuff" would.

Given a chat history (the `history` input, which `chains.with_history` fills), the question
is first rewritten into one that stands alone, and that is what is retrieved and answered;
an empty history costs no rewrite.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from chainkit._tokens import text_tokens
from chainkit.callbacks import Handlers
from chainkit.callbacks.run import active_handler
from chainkit.chains._answer_prompts import (
    ANSWER_PROMPT,
    ANSWER_READS,
    MAP_PROMPT,
    MAP_READS,
    NOTHING_RELEVANT,
    REWRITE_PROMPT,
    REWRITE_READS,
    checked_prompt,
)
from chainkit.chains._bounded import aside_by_side, side_by_side
from chainkit.chains._citations import Citations, read_citations
from chainkit.chains._steps import ain_run, in_run
from chainkit.chains.chain import Chain
from chainkit.chains.errors import (
    ChainTypeError,
    ChainWiringError,
    InputValueError,
    InventedCitationError,
    OptionsError,
    UncitedAnswerError,
)
from chainkit.documents import Document
from chainkit.documents.context import SEPARATOR, as_context, context_block
from chainkit.llms import Model
from chainkit.prompts import BasePromptTemplate
from chainkit.retrievers import Retriever
from chainkit.schema import Message

__all__ = ["AnswerChain", "answer_chain"]

Mode = Literal["stuff", "map_reduce"]
TokenCounter = Callable[[str], int]

NOT_FOUND = "I could not find the answer in the documents."
"""What the chain answers when no document was found, and what the model is asked to answer
when the documents do not say: such an answer needs no citation."""
_REWRITE_RUN = "RewriteQuestion"
_MAP_RUN = "MapDocuments"
_COLLAPSE_RUN = "CollapseNotes"
"""The runs of the question's rewrite, and of the notes on a group of documents and on a
group of notes (each holds its model call: a streamed token tells whose it is)."""


def answer_chain(
    retriever: Retriever,
    model: Model,
    *,
    mode: Mode = "stuff",
    token_budget: int = 3000,
    prompt: BasePromptTemplate | None = None,
    map_prompt: BasePromptTemplate | None = None,
    rewrite_prompt: BasePromptTemplate | None = None,
    count_tokens: TokenCounter | None = None,
    strict: bool = False,
    max_concurrency: int = 4,
    input_key: str = "input",
    history_key: str = "history",
    not_found: str = NOT_FOUND,
    callbacks: Handlers = None,
) -> AnswerChain:
    """A chain that answers its `input` from what `retriever` finds, citing it (see the
    module); `chains.run(chain, question)` gives the answer's text, `chains.call` every
    output:

    - `answer`: the model's answer, its citations as written;
    - `question`: the question answered (the rewritten one, given a history);
    - `documents`: the chunks the model was shown, best first;
    - `citations`: the ids the answer cites that name one of them;
    - `invented_citations`: the ids it cites that name none;
    - `left_out`: how many chunks found did not fit `token_budget`.

    `token_budget` bounds, in tokens, the documents shown in one prompt (counted by
    `count_tokens`, a model's tokenizer's count of a text; by default the project's estimate:
    a quarter of the characters). `prompt` replaces the answer's prompt (it reads `context`,
    `question` and may read `not_found`), `map_prompt` the prompt of map_reduce's notes,
    `rewrite_prompt` the question's rewrite (it reads `question` and `history`). With
    `strict=True` an answer that cites an invented id raises InventedCitationError, one that
    cites nothing UncitedAnswerError. When nothing is found, or nothing found fits the
    budget, the answer is `not_found` and no model is called.
    """
    return AnswerChain(
        retriever,
        model,
        mode=mode,
        token_budget=token_budget,
        prompt=prompt,
        map_prompt=map_prompt,
        rewrite_prompt=rewrite_prompt,
        count_tokens=count_tokens,
        strict=strict,
        max_concurrency=max_concurrency,
        input_key=input_key,
        history_key=history_key,
        not_found=not_found,
        callbacks=callbacks,
    )


class AnswerChain(Chain):
    """An answer chain: see `answer_chain`."""

    answer_key = "answer"

    def __init__(
        self,
        retriever: Retriever,
        model: Model,
        *,
        mode: Mode,
        token_budget: int,
        prompt: BasePromptTemplate | None,
        map_prompt: BasePromptTemplate | None,
        rewrite_prompt: BasePromptTemplate | None,
        count_tokens: TokenCounter | None,
        strict: bool,
        max_concurrency: int,
        input_key: str,
        history_key: str,
        not_found: str,
        callbacks: Handlers,
    ) -> None:
        _require(retriever, Retriever, "retriever", "a retrievers.Retriever")
        _require(model, Model, "model", "a model (llms.Model)")
        if mode not in ("stuff", "map_reduce"):
            raise OptionsError(f"answer_chain mode must be 'stuff' or 'map_reduce', got {mode!r}")
        self.token_budget = _least("token_budget", token_budget, 1)
        self.max_concurrency = _least("max_concurrency", max_concurrency, 1)
        for name, value in (
            ("input_key", input_key),
            ("history_key", history_key),
            ("not_found", not_found),
        ):
            if not isinstance(value, str) or not value.strip():
                raise ChainTypeError(f"answer_chain {name} must be a non-empty str, got {value!r}")
        if not isinstance(strict, bool):
            raise ChainTypeError(f"answer_chain strict must be True or False, got {strict!r:.80}")
        if input_key == history_key:
            raise ChainWiringError(f"answer_chain input_key and history_key are both {input_key!r}")
        if count_tokens is not None and not callable(count_tokens):
            raise ChainTypeError(
                "answer_chain count_tokens must be a function of a text that returns its "
                f"token count, got {type(count_tokens).__name__}"
            )
        self.retriever = retriever
        self.model = model
        self.mode: Mode = mode
        self.prompt = checked_prompt("prompt", prompt, ANSWER_PROMPT, ANSWER_READS)
        self.map_prompt = checked_prompt("map_prompt", map_prompt, MAP_PROMPT, MAP_READS)
        self.rewrite_prompt = checked_prompt(
            "rewrite_prompt", rewrite_prompt, REWRITE_PROMPT, REWRITE_READS
        )
        self.count_tokens = count_tokens or text_tokens
        self.strict = strict
        self.input_key = input_key
        self.history_key = history_key
        self.not_found = not_found
        self.callbacks = callbacks

    def __repr__(self) -> str:
        return f"AnswerChain({self.retriever!r}, {self.model!r}, mode={self.mode!r})"

    @property
    def input_keys(self) -> list[str]:
        return [self.input_key]

    @property
    def optional_input_keys(self) -> list[str]:
        """The chat history, read when given (with_history gives it)."""
        return [self.history_key]

    @property
    def output_keys(self) -> list[str]:
        return ["answer", "question", "documents", "citations", "invented_citations", "left_out"]

    def _call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        question = self._question(inputs)
        history = _history(inputs.get(self.history_key), self.history_key)
        if history:
            question = in_run(
                _REWRITE_RUN, question, lambda q: self._rewritten(q, history, options)
            )
        groups, left_out = self._grouped(_unique(self.retriever.retrieve(question)))
        if len(groups) < 2:
            shown = _Shown(question, groups[0] if groups else [], left_out)
            return self._answered(shown, as_context(shown.documents), options)
        contexts = [as_context(group) for group in groups]
        notes = self._notes(_MAP_RUN, question, contexts, options)
        while (collapsing := self._collapsing(notes)) is not None:
            notes = self._notes(_COLLAPSE_RUN, question, collapsing, options)
        shown = _Shown(question, [document for group in groups for document in group], left_out)
        return self._answered(shown, _joined(notes), options)

    async def _acall(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        question = self._question(inputs)
        history = _history(inputs.get(self.history_key), self.history_key)
        if history:

            async def rewrite(given: str) -> str:
                return await self._arewritten(given, history, options)

            question = await ain_run(_REWRITE_RUN, question, rewrite)
        groups, left_out = self._grouped(_unique(await self.retriever.aretrieve(question)))
        if len(groups) < 2:
            shown = _Shown(question, groups[0] if groups else [], left_out)
            return await self._aanswered(shown, as_context(shown.documents), options)
        contexts = [as_context(group) for group in groups]
        notes = await self._anotes(_MAP_RUN, question, contexts, options)
        while (collapsing := self._collapsing(notes)) is not None:
            notes = await self._anotes(_COLLAPSE_RUN, question, collapsing, options)
        shown = _Shown(question, [document for group in groups for document in group], left_out)
        return await self._aanswered(shown, _joined(notes), options)

    def _question(self, inputs: dict[str, Any]) -> str:
        question = inputs[self.input_key]
        if not isinstance(question, str):
            raise ChainTypeError(
                f"{self.name} input {self.input_key!r} must be the question as a str, got "
                f"{type(question).__name__}"
            )
        if not question.strip():
            raise InputValueError(f"{self.name} got an empty question under {self.input_key!r}")
        return question

    # The question rewritten from the history.

    def _rewritten(self, question: str, history: list[Message], options: Any) -> str:
        messages = self.rewrite_prompt.format_messages(question=question, history=history)
        return _standalone(self.model.generate(messages, **options).content, question)

    async def _arewritten(self, question: str, history: list[Message], options: Any) -> str:
        messages = self.rewrite_prompt.format_messages(question=question, history=history)
        return _standalone((await self.model.agenerate(messages, **options)).content, question)

    # What the model is shown.

    def _tokens(self, text: str) -> int:
        count = self.count_tokens(text)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ChainTypeError(
                f"{self.name}'s count_tokens must return a count (an int >= 0), got {count!r:.80}"
            )
        return count

    def _grouped(self, found: Sequence[Document]) -> tuple[list[list[Document]], int]:
        """The documents the model is shown, in the groups it reads at once (one for
        "stuff"), and how many were left out; a map step only for two groups or more (all
        that fits one prompt is answered from at once)."""
        if self.mode == "map_reduce":
            return self._groups(found)
        shown, left_out = self._fitting(found)
        return [shown] if shown else [], left_out

    def _fitting(self, found: Sequence[Document]) -> tuple[list[Document], int]:
        """The documents that fit the budget, best first, and how many did not."""
        shown: list[Document] = []
        left = self.token_budget
        for document in found:
            tokens = self._tokens(context_block(document))
            if tokens <= left:
                shown.append(document)
                left -= tokens
        return shown, len(found) - len(shown)

    def _groups(self, found: Sequence[Document]) -> tuple[list[list[Document]], int]:
        """The documents in groups that each fit the budget, in order, and how many fit
        none."""
        sizes = [self._tokens(context_block(document)) for document in found]
        fitting = [i for i, size in enumerate(sizes) if size <= self.token_budget]
        groups = _packed([sizes[i] for i in fitting], self.token_budget)
        return [[found[fitting[i]] for i in group] for group in groups], len(found) - len(fitting)

    # The map step: notes on each group of documents, and on groups of notes, side by side.

    def _notes(self, run: str, question: str, contexts: list[str], options: Any) -> list[str]:
        """The notes on each of `contexts`, each a run named `run`."""
        return side_by_side(
            [partial(self._note, run, question, context, options) for context in contexts],
            self.max_concurrency,
        )

    async def _anotes(
        self, run: str, question: str, contexts: list[str], options: Any
    ) -> list[str]:
        """Async twin of `_notes`."""
        return await aside_by_side(
            [partial(self._anote, run, question, context, options) for context in contexts],
            self.max_concurrency,
        )

    def _note(self, run: str, question: str, context: str, options: Any) -> str:
        def work(_: object) -> str:
            messages = self.map_prompt.format_messages(context=context, question=question)
            return self.model.generate(messages, **options).content

        note: str = in_run(run, {"question": question, "context": context}, work)
        return note

    async def _anote(self, run: str, question: str, context: str, options: Any) -> str:
        async def work(_: object) -> str:
            messages = self.map_prompt.format_messages(context=context, question=question)
            return (await self.model.agenerate(messages, **options)).content

        note: str = await ain_run(run, {"question": question, "context": context}, work)
        return note

    def _collapsing(self, notes: Sequence[str]) -> list[str] | None:
        """The notes that hold something, joined in groups to be read into fewer notes,
        when together they do not fit the budget; None when they do, or when no two fit
        together (they are then reduced as they are)."""
        kept = _kept(notes)
        groups = _packed([self._tokens(note) for note in kept], self.token_budget)
        if len(groups) < 2 or len(groups) == len(kept):
            return None
        return [SEPARATOR.join(kept[i] for i in group) for group in groups]

    # The answer.

    def _answered(self, shown: _Shown, context: str, options: Any) -> dict[str, Any]:
        """The outputs of the answer from `context` (the documents, or the notes on them);
        with no context, the not-found answer, no model called."""
        if not context:
            return self._outputs(shown, self.not_found, None)
        reply = self.model.generate(self._messages(context, shown.question), **options)
        return self._checked(shown, reply.content)

    async def _aanswered(self, shown: _Shown, context: str, options: Any) -> dict[str, Any]:
        """Async twin of `_answered`."""
        if not context:
            return self._outputs(shown, self.not_found, None)
        reply = await self.model.agenerate(self._messages(context, shown.question), **options)
        return self._checked(shown, reply.content)

    def _messages(self, context: str, question: str) -> list[Message]:
        values = {"context": context, "question": question, "not_found": self.not_found}
        return self.prompt.format_messages(
            **{name: values[name] for name in self.prompt.input_variables}
        )

    def _checked(self, shown: _Shown, answer: str) -> dict[str, Any]:
        """The outputs of `answer`, its citations read, reported and, when strict, held to."""
        if answer.strip() == self.not_found.strip():
            return self._outputs(shown, answer, None)
        citations = read_citations(answer, {document.id for document in shown.documents})
        handler = active_handler()
        if handler is not None:
            handler.handle_citations(list(citations.cited), list(citations.invented))
        if self.strict and citations.invented:
            raise InventedCitationError(answer, citations.cited, citations.invented)
        if self.strict and not citations.cited:
            raise UncitedAnswerError(answer)
        return self._outputs(shown, answer, citations)

    def _outputs(self, shown: _Shown, answer: str, citations: Citations | None) -> dict[str, Any]:
        return {
            "answer": answer,
            "question": shown.question,
            "documents": shown.documents,
            "citations": list(citations.cited) if citations else [],
            "invented_citations": list(citations.invented) if citations else [],
            "left_out": shown.left_out,
        }


@dataclass(frozen=True, slots=True)
class _Shown:
    """What the model is shown for a question: the question (rewritten, given a history),
    the documents, and how many documents found were left out."""

    question: str
    documents: list[Document]
    left_out: int


def _unique(found: Sequence[Document]) -> list[Document]:
    """The documents found, each id once, where it ranks best: a chunk shown twice would
    cost its tokens twice and tell the model nothing new."""
    first: dict[str, Document] = {}
    for document in found:
        if not isinstance(document, Document):
            raise ChainTypeError(
                f"the retriever found a {type(document).__name__}, not a documents.Document"
            )
        first.setdefault(document.id, document)
    return list(first.values())


def _kept(notes: Sequence[str]) -> list[str]:
    """The notes that hold something for the question."""
    return [note.strip() for note in notes if note.strip().rstrip(".") != NOTHING_RELEVANT]


def _joined(notes: Sequence[str]) -> str:
    """The notes that hold something, one block each; empty when none does."""
    return SEPARATOR.join(_kept(notes))


def _packed(sizes: Sequence[int], budget: int) -> list[list[int]]:
    """The positions of items of `sizes`, in order, in groups whose sizes add up to at most
    `budget` (an item over it alone in its group)."""
    groups: list[list[int]] = []
    left = 0
    for index, size in enumerate(sizes):
        if not groups or size > left:
            groups.append([])
            left = budget
        groups[-1].append(index)
        left -= size
    return groups


def _standalone(rewritten: str, question: str) -> str:
    """The rewritten question; the question as asked when the model gave back nothing."""
    return rewritten.strip() or question


def _history(value: object, key: str) -> list[Message]:
    """The chat history given under `key`: messages, or a text (a history `with_history`
    gives as text), as messages; an empty list when none was given."""
    if value is None or value == "" or value == []:
        return []
    if isinstance(value, str):
        return [Message("user", f"The conversation so far:\n{value}")]
    if isinstance(value, list | tuple) and all(isinstance(each, Message) for each in value):
        return list(value)
    raise ChainTypeError(
        f"answer chain input {key!r} must be the chat history (a list of messages, or a "
        f"text), got {type(value).__name__}"
    )


def _require(value: object, kind: type, argument: str, expected: str) -> None:
    if not isinstance(value, kind):
        raise ChainTypeError(
            f"answer_chain {argument} must be {expected}, got {type(value).__name__}"
        )


def _least(name: str, value: object, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ChainTypeError(f"answer_chain {name} must be an int, got {value!r:.80}")
    if value < least:
        raise OptionsError(f"answer_chain {name} must be at least {least}, got {value}")
    return value
