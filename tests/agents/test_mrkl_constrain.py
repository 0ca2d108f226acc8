"""OneShotAgent(constrain=...): each request carries the grammar of the next MRKL step, in the
field the server takes, shaped by the steps so far; a server that refuses it gets an error
naming the option. The grammars are read as regular expressions (tests/support/gbnf.py)."""

from __future__ import annotations

import pytest

from chainkit import agents, chains, tools
from chainkit.agents import ConstraintRefusedError
from chainkit.agents.mrkl_parser import parse_mrkl_output
from chainkit.llms import ModelStatusError
from chainkit.schema import AgentAction
from chainkit.tools.builtin import Calculator, CurrentTime, RandomNumber
from tests.support.gbnf import matches
from tests.support.openai_server import Fault
from tests.support.stub_tools import named


def grammars(openai_server, field="grammar"):
    return [request.body[field] for request in openai_server.chat_requests()]


def test_each_request_carries_the_grammar_of_its_step(mode, openai_server, openai_llm):
    openai_server.push(
        " I need the calculator\nAction: calculator\nAction Input: 17 * 23\n",
        " Now I know\nFinal Answer: 391\n",
    )
    agent = agents.OneShotAgent(openai_llm, [Calculator(), RandomNumber()], constrain="grammar")
    assert mode.run(agents.Executor(agent), "What is 17 * 23?") == "391"
    first, second = grammars(openai_server)
    assert matches(first, " I need the calculator\nAction: calculator\nAction Input: 17 * 23\n")
    assert matches(first, " go\nAction: random_number\nAction Input: 1-6\n")
    assert matches(first, " sure\nFinal Answer: 12\n")
    assert not matches(first, " go\nAction: current_time\nAction Input: UTC\n")  # not offered
    assert not matches(first, " go: now\nFinal Answer: 12\n")  # a colon would be a keyword
    # After the tool's result (answer_after=1): only the answer, which begins with the result.
    assert not matches(second, " again\nAction: calculator\nAction Input: 17*23\n")
    assert matches(second, " done\nFinal Answer: 391, the product\n")
    assert matches(second, " done\nFinal Answer: 391\n")
    assert not matches(second, " done\nFinal Answer: 3910\n")  # the result is not lengthened
    assert not matches(second, " done\nFinal Answer: 390\n")


def test_before_answer_after_calls_a_run_may_call_tools_but_never_twice_alike(
    mode, openai_server, openai_llm
):
    openai_server.push(
        " go\nAction: calculator\nAction Input: 17 * 23\n",
        " go\nAction: calculator\nAction Input: 391 + 1\n",
        " done\nFinal Answer: 392\n",
    )
    agent = agents.OneShotAgent(openai_llm, [Calculator()], constrain="grammar", answer_after=2)
    assert mode.run(agents.Executor(agent), "What is 17 * 23 + 1?") == "392"
    _, second, third = grammars(openai_server)
    assert not matches(second, " again\nAction: calculator\nAction Input: 17 * 23\n")
    assert not matches(second, ' again\nAction: calculator\nAction Input: "17 * 23"\n')
    assert matches(second, " again\nAction: calculator\nAction Input: 17*23\n")
    assert matches(second, " done\nFinal Answer: 391\n")
    assert not matches(third, " go\nAction: calculator\nAction Input: 1 + 1\n")
    assert matches(third, " done\nFinal Answer: 392\n")


def test_with_no_tool_offered_the_grammar_allows_the_answer_alone(openai_server, openai_llm):
    openai_server.push(" ok\nFinal Answer: hi\n")
    retriever = tools.ToolRetriever([Calculator()], top_k=1)  # shares no word with "hello"
    agent = agents.OneShotAgent(
        openai_llm, [Calculator()], tool_retriever=retriever, constrain="grammar"
    )
    assert chains.run(agents.Executor(agent), "hello") == "hi"
    (grammar,) = grammars(openai_server)
    assert matches(grammar, " ok\nFinal Answer: hi\n")
    assert not matches(grammar, " ok\nAction: calculator\nAction Input: 1\n")


def test_every_reply_a_grammar_allows_parses_as_the_step_it_spells(openai_server, openai_llm):
    names = ["calculator", 'odd"na\\me', "数学"]
    tools = [named(name, "ok") for name in names]
    openai_server.push(" go\nFinal Answer: x\n")
    agent = agents.OneShotAgent(openai_llm, tools, constrain="grammar")
    chains.run(agents.Executor(agent), "q")
    (grammar,) = grammars(openai_server)
    for name in names:
        reply = f" go\nAction: {name}\nAction Input: 2 + 2\n"
        assert matches(grammar, reply)
        assert parse_mrkl_output(reply) == AgentAction(name, "2 + 2", reply.rstrip())


def test_the_final_answer_asked_for_at_a_limit_is_constrained(mode, openai_server, openai_llm):
    openai_server.push(" go\nAction: calculator\nAction Input: 2 + 2\n", " 4\n")
    agent = agents.OneShotAgent(openai_llm, [Calculator()], constrain="grammar")
    executor = agents.Executor(agent, max_iterations=1, early_stopping_method="generate")
    assert mode.run(executor, "2 + 2?") == "4"
    final = grammars(openai_server)[-1]
    assert matches(final, " 4 it is\n")
    assert not matches(final, " 5\n")
    assert not matches(final, " go\nAction: calculator\nAction Input: 3\n")


def test_a_dotted_field_nests_and_keeps_the_callers_extra_body(mode, openai_server, openai_llm):
    openai_server.push(" ok\nFinal Answer: 3\n")
    agent = agents.OneShotAgent(openai_llm, [CurrentTime()], constrain="structured_outputs.grammar")
    executor = agents.Executor(agent)
    assert mode.call(executor, {"input": "q"}, extra_body={"top_k": 5})["output"] == "3"
    (body,) = [request.body for request in openai_server.chat_requests()]
    assert body["top_k"] == 5
    assert matches(body["structured_outputs"]["grammar"], " ok\nFinal Answer: 3\n")


def test_without_constrain_the_request_carries_no_grammar(openai_server, openai_llm):
    openai_server.push("Final Answer: 3")
    chains.run(agents.Executor(agents.OneShotAgent(openai_llm, [Calculator()])), "q")
    assert "grammar" not in openai_server.chat_requests()[0].body


@pytest.mark.parametrize("status", [400, 422])
def test_a_server_that_refuses_the_field_gets_an_error_naming_it(
    mode, openai_server, openai_llm, status
):
    openai_server.fail(Fault.http(status, "Unrecognized request argument supplied: grammar"))
    agent = agents.OneShotAgent(openai_llm, [Calculator()], constrain="grammar")
    with pytest.raises(ConstraintRefusedError) as raised:
        mode.run(agents.Executor(agent), "q")
    message = str(raised.value)
    assert "constrain='grammar'" in message
    assert "Unrecognized request argument supplied: grammar" in message
    assert isinstance(raised.value.__cause__, ModelStatusError)


def test_other_failures_of_a_constrained_call_stay_what_they_are(mode, openai_server, openai_llm):
    openai_server.fail(Fault.http(401))
    agent = agents.OneShotAgent(openai_llm, [Calculator()], constrain="grammar")
    with pytest.raises(ModelStatusError) as raised:
        mode.run(agents.Executor(agent), "q")
    assert not isinstance(raised.value, ConstraintRefusedError)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (True, agents.errors.AgentTypeError),
        ("", agents.errors.AgentConfigError),
        ("a..b", agents.errors.AgentConfigError),
    ],
)
def test_constrain_must_name_a_request_field(openai_llm, value, error):
    with pytest.raises(error, match="constrain"):
        agents.OneShotAgent(openai_llm, [Calculator()], constrain=value)


@pytest.mark.parametrize(
    ("value", "error"), [(0, agents.errors.AgentConfigError), (1.5, agents.errors.AgentTypeError)]
)
def test_answer_after_must_be_a_whole_number_of_calls(openai_llm, value, error):
    with pytest.raises(error, match="answer_after"):
        agents.OneShotAgent(openai_llm, [Calculator()], constrain="grammar", answer_after=value)
