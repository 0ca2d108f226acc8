"""A summary memory whose summariser is a real OpenAI-compatible model over HTTP."""

from __future__ import annotations

from chainkit import chains, memory, prompts
from chainkit._tokens import message_tokens
from chainkit.llms import OpenAI
from tests.support.event_recorder import EventRecorder
from tests.support.modes import Mode
from tests.support.openai_server import OpenAIServer


def test_each_fold_is_one_request_with_the_summary_bound_as_max_tokens(
    mode: Mode, openai_server: OpenAIServer, openai_llm: OpenAI, events: EventRecorder
) -> None:
    turns = 6
    kept = memory.ConversationSummary(openai_llm, max_summary_tokens=24, return_messages=True)
    prompt = prompts.ChatPromptTemplate(
        [prompts.MessagesPlaceholder("history"), ("user", "{input}")]
    )
    chain = chains.LLMChain(prompt, openai_llm, memory=kept, callbacks=[events])
    for turn in range(turns):
        openai_server.push(f"answer {turn} " * 3)
        openai_server.push(f"summary up to turn {turn}")  # every exchange is folded
        mode.run(chain, f"question {turn} " * 3)
        assert message_tokens(kept.load_memory_variables({})["history"]) <= 24
    requests = [r.body for r in openai_server.chat_requests()]
    summaries = [b for b in requests if b["messages"][0]["content"].startswith("You keep")]
    assert len(summaries) == turns and all(b["max_tokens"] == 24 for b in summaries)
    assert len(requests) == 2 * turns
    # Incremental: each fold sends the summary before it, and only the exchange since.
    last = summaries[-1]["messages"][1]["content"]
    assert f"summary up to turn {turns - 2}" in last and "question 0" not in last
    assert len(events.heard("llm_end")) == len(requests)  # each an llm run, heard
    shown = kept.load_memory_variables({})["history"]
    assert (
        shown[0].content == f"Summary of the conversation so far:\nsummary up to turn {turns - 1}"
    )
