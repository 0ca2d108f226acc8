"""The tools under hostile input: wrong types, empty, control characters, lone surrogates,
full-width and other scripts, 1 MB inputs, arguments cut off anywhere, computations that
would blow up, and many threads or tasks at once. Each case runs under a hard timeout.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Literal

import pytest

from chainkit.llms import OfflineModel
from chainkit.schema import Message
from chainkit.tools import (
    Calculator,
    CurrentTime,
    InvalidArgumentsError,
    RandomNumber,
    Tool,
    ToolError,
    tool,
)

MB = 1_000_000
FIXED = datetime(2025, 3, 14, 7, 9, 26, tzinfo=UTC)


@tool
def square(x: int) -> int:
    """Squares a number."""
    return x * x


@tool
def echo(text: str) -> str:
    """Echoes the start of a text and its length."""
    return f"{text[:5]}|{len(text)}"


@tool
def paint(color: Literal["red", "green"]) -> str:
    """Paints."""
    return f"painted {color}"


@tool
async def slow_double(x: int) -> int:
    """Doubles, after yielding to the event loop."""
    await asyncio.sleep(0)
    return 2 * x


def builtins() -> list[Tool]:
    return [Calculator(), RandomNumber(seed=1), CurrentTime(clock=lambda: FIXED)]


def run_in_threads(work: Callable[[int], None], count: int) -> list[BaseException]:
    """Runs `work(i)` in `count` threads started together; the exceptions they raised."""
    failures: list[BaseException] = []
    barrier = threading.Barrier(count)

    def target(index: int) -> None:
        barrier.wait()
        try:
            work(index)
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return failures


# --- wrong types --------------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("value", [None, 42, b"1+1", {"input": "1+1"}, ["1"]], ids=repr)
def test_builtin_tools_refuse_input_that_is_not_text(value):
    for builtin in builtins():
        with pytest.raises(TypeError, match=f"input is text \\(str\\), got {type(value).__name__}"):
            builtin.call(value)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("value", [None, 42, b"{}", {"x": 2}], ids=repr)
def test_structured_tools_refuse_arguments_that_are_not_text(value):
    message = f"tool square takes its arguments as JSON text \\(str\\), got {type(value).__name__}"
    with pytest.raises(TypeError, match=message):
        square.call(value)
    with pytest.raises(TypeError, match=message):
        square.input_from_arguments(value)
    with pytest.raises(TypeError, match="tool slow_double takes its arguments as JSON text"):
        asyncio.run(slow_double.acall(value))


# --- empty, control characters, surrogates, other scripts ----------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("text", ["", "   ", "\n\t\r", "``", "```\n```", "？", "="])
def test_blank_input(text):
    with pytest.raises(ToolError, match="empty expression"):
        Calculator().call(text)
    assert 1 <= int(RandomNumber().call(text)) <= 100
    assert CurrentTime(clock=lambda: FIXED).call(text).endswith("(UTC)")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("char", ["\x00", "\x1b", "\ud800", "\udfff"], ids=repr)
def test_control_characters_and_lone_surrogates(char):
    with pytest.raises(ToolError, match="unexpected character"):
        Calculator().call(f"1+{char}1")
    assert RandomNumber().call(f"1{char}-{char}6") in {"1", "2", "3", "4", "5", "6"}
    with pytest.raises(ToolError, match=r"unknown time zone .* \(did you mean UTC\?\)"):
        CurrentTime(clock=lambda: FIXED).call(f"{char}UTC")
    assert echo.call(f"a{char}b") == f"a{char}b|3"
    assert echo.call(json.dumps({"text": f"a{char}b"})) == f"a{char}b|3"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("char", ["\u200b", "\u200d", "\ufeff", "\u00ad", "\u2060"], ids=repr)
def test_invisible_characters_are_dropped_by_the_builtin_tools(char):
    assert Calculator().call(f"{char}1+{char}1{char}") == "2"
    assert RandomNumber().call(f"{char}4{char}-{char}4") == "4"
    assert CurrentTime(clock=lambda: FIXED).call(f"{char}Asia/Tokyo{char}").endswith("(Asia/Tokyo)")


@pytest.mark.timeout(60)
def test_other_scripts_digits_and_widths():
    assert Calculator().call("１２＊（３＋４）") == "84"
    assert Calculator().call("٣ + ٤") == "7"
    assert Calculator().call("३ * ४") == "12"
    assert RandomNumber().call("٥-٥") == "5"
    assert CurrentTime(clock=lambda: FIXED).call("Ａｓｉａ／Ｔｏｋｙｏ").endswith("(Asia/Tokyo)")
    # A user's tool gets text as it was typed: its choices are matched exactly.
    with pytest.raises(InvalidArgumentsError, match='expected one of "red", "green"'):
        paint.call("ｒｅｄ")


# --- 1 MB inputs ----------------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "text",
    ["9" * MB, "(" * MB, "²" * MB, "１" * MB, "\ud800" * MB, " " * MB + "1+1", "1+" * (MB // 2)],
    ids=["digits", "parentheses", "superscripts", "full-width", "surrogates", "spaces", "plus"],
)
def test_calculator_megabyte_input_is_refused_as_too_long(text):
    with pytest.raises(ToolError, match="too long"):
        Calculator().call(text)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("text", "outcome"),
    [
        ("9" * MB, "range bounds must be within ±10^18"),
        ("９" * MB, "range bounds must be within ±10^18"),
        ("1-" * (MB // 2), "got 3 numbers"),
        ("1," * (MB // 2), "got 3 numbers"),
        ("x" * MB, None),
        ("-" * MB, None),
        ("\ud800" * MB, None),
        ("随机" * (MB // 2), None),
    ],
    ids=[
        "digits",
        "full-width",
        "dashes-and-ones",
        "commas",
        "letters",
        "dashes",
        "surrogates",
        "cjk",
    ],
)
def test_random_number_megabyte_input(text, outcome):
    if outcome is None:
        assert 1 <= int(RandomNumber().call(text)) <= 100
    else:
        with pytest.raises(ToolError, match=re.escape(outcome)) as caught:
            RandomNumber().call(text)
        assert len(str(caught.value)) < 300  # the input is quoted short


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("text", "outcome"),
    [
        ("x " * (MB // 2), "(UTC)"),
        ("x" * MB, "(UTC)"),
        ("a/b " * (MB // 4), "(UTC)"),
        ("word " * (MB // 5) + "Asia/Tokyo", "(Asia/Tokyo)"),
        ("Asia/" * (MB // 5), "unknown time zone"),
        ("UTC+" + "9" * MB, "unknown time zone"),
        ("/" * MB, "unknown time zone"),
    ],
    ids=["words", "one-word", "slashes", "zone-at-the-end", "area", "offset", "slash-run"],
)
def test_current_time_megabyte_input(text, outcome):
    clock = CurrentTime(clock=lambda: FIXED)
    if outcome.startswith("("):
        assert clock.call(text).endswith(outcome)
    else:
        with pytest.raises(ToolError, match=outcome) as caught:
            clock.call(text)
        assert len(str(caught.value)) < 400


@pytest.mark.timeout(60)
def test_structured_tool_megabyte_arguments():
    assert echo.call(json.dumps({"text": "x" * MB})) == f"xxxxx|{MB}"
    assert echo.call("y" * MB) == f"yyyyy|{MB}"
    for text in ("z" * MB, "{" * MB, "[" * MB):
        with pytest.raises(InvalidArgumentsError) as caught:
            paint.call(text)
        assert len(str(caught.value)) < 300
    with pytest.raises(InvalidArgumentsError, match="nested too deeply"):
        square.call("[" * 100_000 + "]" * 100_000)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "arguments", ["1" * 5000, '{"x": ' + "1" * 5000 + "}"], ids=["bare", "object"]
)
def test_a_number_too_long_to_read_is_invalid_arguments_not_a_crash(arguments):
    with pytest.raises(InvalidArgumentsError) as caught:
        square.call(arguments)
    assert "x: expected integer" in str(caught.value) or "more than 4300 digits" in str(
        caught.value
    )
    with pytest.raises(InvalidArgumentsError, match="more than 4300 digits"):
        square.input_from_arguments('{"x": ' + "1" * 5000 + "}")


@tool
def get_weather(city: str, days: int = 1) -> str:
    """Current weather (天气) for a city."""
    return f"{city}|{days}"


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "question",
    [
        "北京天气怎么样? " * (MB // 10),
        "weather " * (MB // 8),
        "天气" + "\ud800" * MB,
        "天气" + "9" * MB,
    ],
    ids=["cjk", "words", "surrogates", "digits"],
)
def test_offline_model_megabyte_question(question):
    reply = OfflineModel().generate(
        [Message.user(question)], tools=[echo.info(), square.info(), get_weather.info()]
    )
    [call] = reply.tool_calls  # a tool was chosen and its arguments built within the timeout
    assert call.function.name == "get_weather"
    json.loads(call.function.arguments)


# --- computations that would blow up --------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ("9**9**9**9", "too large"),
        ("(10**3999)**(10**3999)", "too large"),
        ("exp(exp(exp(exp(9))))", "too large"),
        ("2**2**2**2**2**2", "too large"),
        ("(1+1e-3999)**(10**3999)", "exponent is too large to compute"),
        ("0.5**(10**(10**3))", "too small"),
        ("10**-(10**3999)", "too small"),
        ("round(1, 10**9)", "digits must be an integer from -100 to 100"),
        ("max(" + ",".join(["9**9**9"] * 50) + ")", "too large"),
    ],
)
def test_blowups_end_quickly_with_a_clear_error(expression, problem):
    with pytest.raises(ToolError, match=problem):
        Calculator().call(expression)


# --- arguments cut off anywhere --------------------------------------------------------------


@pytest.mark.timeout(60)
def test_arguments_cut_off_anywhere_are_refused_or_valid():
    arguments = json.dumps({"text": 'a "quoted" 文本 \\ with\nlines'})
    for end in range(len(arguments) + 1):
        cut = arguments[:end]
        try:
            echo.input_from_arguments(cut)
        except InvalidArgumentsError:
            continue
        assert end in (0, len(arguments))  # only nothing or everything is valid


# --- many at once ----------------------------------------------------------------------------


@pytest.mark.timeout(30)
def test_builtin_tools_from_many_threads():
    calculator, dice, clock = builtins()
    expected = {
        "exp(-1000)": "5.0759588975494568e-435",
        "10**-4001": "1e-4001",
        "0.1+0.2": "0.3",
        "1/3": "0.3333333333333333",
    }
    zones = {
        "Asia/Tokyo": "+09:00",
        "utc": "+00:00",
        "UTC-5": "-05:00",
        "america/new_york": "-04:00",
    }

    def work(index: int) -> None:
        for _ in range(50):
            for expression, result in expected.items():
                assert calculator.call(expression) == result
            assert 3 <= int(dice.call(f"{index % 3 + 3} to 9")) <= 9
            for zone, offset in zones.items():
                assert offset in clock.call(f"time in {zone}")

    assert run_in_threads(work, 16) == []


@pytest.mark.timeout(30)
def test_structured_tools_from_many_threads_and_tasks():
    def work(index: int) -> None:
        for step in range(100):
            assert square.call(str(index + step)) == str((index + step) ** 2)
            assert echo.call(json.dumps({"text": f"t{index}"})) == f"t{index}|{len(f't{index}')}"

    assert run_in_threads(work, 16) == []

    async def many() -> list[str]:
        return await asyncio.gather(*(slow_double.acall(str(i)) for i in range(500)))

    assert asyncio.run(many()) == [str(2 * i) for i in range(500)]
