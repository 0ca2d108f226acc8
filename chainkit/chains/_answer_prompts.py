"""The prompts of answer chains (the answer's, the map step's notes', the question's
rewrite), and what a prompt given in their place must read."""

from __future__ import annotations

from chainkit.chains.errors import ChainTypeError, ChainWiringError
from chainkit.prompts import BasePromptTemplate, ChatPromptTemplate, MessagesPlaceholder

NOTHING_RELEVANT = "NONE"
"""A map step's note when its documents hold nothing for the question: left out."""

ANSWER_PROMPT = ChatPromptTemplate(
    [
        (
            "system",
            "Answer the question from the documents below and nothing else. After each "
            "statement, cite the documents it comes from by their ids in square brackets, "
            "exactly as the documents show them, such as [notes.md@0]; cite several as "
            "[a.md@0][b.md@40]. Cite no other source. If the documents do not answer the "
            "question, reply exactly: {not_found}",
        ),
        ("user", "Documents:\n\n{context}\n\nQuestion: {question}"),
    ]
)
MAP_PROMPT = ChatPromptTemplate(
    [
        (
            "system",
            "Write down, briefly, what the documents below say that helps answer the "
            "question. After each point, cite the documents it comes from by their ids in "
            "square brackets, exactly as the documents show them, such as [notes.md@0]. If "
            f"nothing in them helps, reply exactly: {NOTHING_RELEVANT}",
        ),
        ("user", "Documents:\n\n{context}\n\nQuestion: {question}"),
    ]
)
# llms.OfflineModel knows this prompt by its first words, and gives the question back.
REWRITE_PROMPT = ChatPromptTemplate(
    [
        (
            "system",
            "Rewrite the user's last question so that it can be understood without the "
            "conversation before it: name what its pronouns and short forms refer to. Reply "
            "with the question alone; do not answer it.",
        ),
        MessagesPlaceholder("history"),
        ("user", "{question}"),
    ]
)


ANSWER_READS = ({"context", "question"}, {"not_found"})
MAP_READS = ({"context", "question"}, set[str]())
REWRITE_READS = ({"question", "history"}, set[str]())
"""What each prompt must read, and what else it may."""


def checked_prompt(
    name: str,
    prompt: BasePromptTemplate | None,
    default: BasePromptTemplate,
    reads: tuple[set[str], set[str]],
) -> BasePromptTemplate:
    if prompt is None:
        return default
    if not isinstance(prompt, BasePromptTemplate):
        raise ChainTypeError(
            f"answer_chain {name} must be a prompt template, got {type(prompt).__name__}"
        )
    needed, optional = reads
    variables = set(prompt.input_variables)
    if not needed <= variables <= needed | optional:
        raise ChainWiringError(
            f"answer_chain {name} must read {sorted(needed)}"
            f"{f' (and may read {sorted(optional)})' if optional else ''}; its variables are "
            f"{sorted(variables)}"
        )
    return prompt
