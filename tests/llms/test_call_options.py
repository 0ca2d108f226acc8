"""CallOptions: a misspelt option is caught by mypy in typed code, and refused at run time."""

import textwrap
from pathlib import Path
from typing import Any

import pytest

from chainkit import chains, llms
from chainkit.llms import FakeLLM
from chainkit.llms.errors import UnknownOptionError
from chainkit.prompts import PromptTemplate
from tests.support.typecheck import mypy_errors

USER_CODE = textwrap.dedent(
    """
    from chainkit import chains, llms
    from chainkit.prompts import PromptTemplate

    chain = chains.LLMChain(PromptTemplate.from_template("{q}"), llms.FakeLLM(["a"]))
    chains.run(chain, "x", temprature=0.2)
    chains.run(chain, "x", temperature=0.2, max_tokens=9, stop=["\\n"])
    llms.FakeLLM(["a"]).generate([], seed="7")
    llms.OpenAI("m", temperature=0, seed=1)
    llms.OpenAI("m", temprature=0)
    llms.OpenAI("m", streaming_func=print)
    """
)


@pytest.mark.timeout(240)
def test_mypy_flags_a_misspelt_option_and_a_wrong_type(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    errors, out = mypy_errors(tmp_path, USER_CODE)
    assert len(errors) == 4, out
    assert ':6: error: Unexpected keyword argument "temprature"' in errors[0]
    assert ':8: error: Argument "seed"' in errors[1]
    # A model's defaults are typed too; a call-only option is not one of them.
    assert ':10: error: Unexpected keyword argument "temprature" for "OpenAI"' in errors[2]
    assert ':11: error: Unexpected keyword argument "streaming_func" for "OpenAI"' in errors[3]


@pytest.mark.parametrize(
    ("given", "hint"),
    [
        ("temprature", "did you mean 'temperature'?"),
        ("max_token", "did you mean 'max_tokens'?"),
        ("stop_words", "use stop."),
        ("top_k", "extra_body={'top_k': ...}"),
    ],
)
def test_an_unknown_option_is_refused_before_any_work_with_a_hint(given: str, hint: str) -> None:
    fake = FakeLLM(["a"])
    chain = chains.LLMChain(PromptTemplate.from_template("{q}"), fake)
    misspelt: dict[str, Any] = {given: 1}
    with pytest.raises(UnknownOptionError, match=f"unknown call option '{given}'") as info:
        chains.run(chain, "x", **misspelt)
    assert hint in str(info.value)
    with pytest.raises(UnknownOptionError, match=given):
        fake.generate([], **misspelt)
    assert fake.calls == []


def test_an_unknown_default_option_of_a_model_is_refused_when_built() -> None:
    with pytest.raises(UnknownOptionError, match="did you mean 'temperature'"):
        llms.OpenAI("m", base_url="http://127.0.0.1:9/v1", temprature=0.1)  # type: ignore[call-arg]


def test_every_option_name_is_known() -> None:
    assert set(llms.CallOptions.__optional_keys__) >= {
        "stop", "temperature", "max_tokens", "top_p", "seed", "model", "timeout",
        "streaming_func", "callbacks", "extra_body", "extra_headers", "extra_query",
    }  # fmt: skip


def test_a_models_default_options_are_the_call_options_but_those_only_a_call_has() -> None:
    only_a_call_has = {"model", "timeout", "streaming_func", "callbacks"}
    assert llms.DefaultOptions.__optional_keys__ == (
        llms.CallOptions.__optional_keys__ - only_a_call_has
    )
