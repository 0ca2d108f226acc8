import asyncio
import math
from datetime import UTC, datetime, timedelta
from decimal import MAX_EMAX, MIN_EMIN, Context, Decimal, localcontext
from fractions import Fraction

import pytest

from chainkit.tools import ToolError
from chainkit.tools.builtin.calculator import MAX_DEPTH, MAX_LENGTH, Calculator
from chainkit.tools.builtin.current_time import CurrentTime
from chainkit.tools.builtin.random_number import RandomNumber

# --- Calculator ----------------------------------------------------------------------------


def calculate(expression):
    return Calculator().call(expression)


def calculation_error(expression):
    with pytest.raises(ToolError) as caught:
        Calculator().call(expression)
    return str(caught.value)


@pytest.mark.parametrize(
    ("expression", "result"),
    [
        ("12*(3+4)", "84"),
        ("7/2", "3.5"),
        ("6/2", "3"),
        ("7//2", "3"),
        ("-7//2", "-4"),
        ("7 % 3", "1"),
        ("2**10", "1024"),
        ("2**-2", "0.25"),
        ("-3**2", "-9"),
        ("+5 - -5", "10"),
        ("0.1+0.2", "0.3"),
        ("1e3 + 1_000 + 0x10", "2016"),
        ("2**100", "1267650600228229401496703205376"),
        ("2.0**60", "1152921504606846976"),
        ("2.5**-2", "0.16"),
        ("sqrt(2)", "1.4142135623730951"),
        ("sqrt(16) + abs(-2)", "6"),
        ("round(3.14159, 2)", "3.14"),
        ("round(2.5)", "2"),
        ("min(3, 1, 2) + max(4, 5)", "6"),
        ("floor(2.7) + ceil(2.1)", "5"),
        ("log(e)", "1"),
        ("log(8, 2)", "3"),
        ("exp(0)", "1"),
        ("pi", "3.141592653589793"),
        ("10**3999 // 10**3998", "10"),
    ],
)
def test_arithmetic(expression, result):
    assert calculate(expression) == result


@pytest.mark.parametrize(
    "written",
    [
        "`12*(3+4)`",
        '"12*(3+4)"',
        "'12*(3+4)'",
        "```\n12*(3+4)\n```",
        "```python\n12*(3+4)\n```",
        "12 × (3 + 4)",
        "12*(3+4) =",
        "12*(3+4)?",
        "12*(3+4)？",
        "12＊（3＋4）",
        "１２＊（３＋４）＝",
        "  12*(3+4)  \n",
    ],
)
def test_model_formatting_is_forgiven(written):
    assert calculate(written) == "84"


def test_other_spellings():
    assert calculate("2^10") == "1024"
    assert calculate("84 ÷ 2 − 40") == "2"
    assert calculate("１２+３") == "15"
    assert calculate("（２）") == "2"


@pytest.mark.parametrize(
    ("expression", "result"),
    [("3²", "9"), ("(1+2)²", "9"), ("2¹⁰", "1024"), ("10⁻³", "0.001"), ("２³", "8")],
)
def test_superscripts_are_powers_not_digits(expression, result):
    assert calculate(expression) == result


def test_subscripts_are_refused_rather_than_read_as_digits():
    assert calculation_error("10₂ + 1") == "unexpected subscript '₂' in '10₂ + 1'"


@pytest.mark.parametrize(
    ("expression", "result"),
    [
        ("1" + "+1" * 499, "500"),
        ("1" + "-1" * 499, "-498"),
        ("1" + "*2" * 300, str(2**300)),
        ("2" + "**1" * 300, "2"),
        ("1" + "+2*3" * 200, "1201"),
        ("1+(2" * MAX_DEPTH + ")" * MAX_DEPTH, str(1 + 21 * (MAX_DEPTH - 1) + 2)),
    ],
)
def test_long_flat_chains_are_not_nesting(expression, result):
    assert len(expression) <= MAX_LENGTH
    assert calculate(expression) == result


@pytest.mark.parametrize(
    "expression",
    [
        "1+(2" * (MAX_DEPTH + 1) + ")" * (MAX_DEPTH + 1),
        "-" * (MAX_DEPTH + 1) + "1",
        "sqrt(" * (MAX_DEPTH + 1) + "1" + ")" * (MAX_DEPTH + 1),
        "2**-" * (MAX_DEPTH + 1) + "1",
    ],
)
def test_real_nesting_stays_bounded(expression):
    assert calculation_error(expression).endswith(
        f"the expression is nested more than {MAX_DEPTH} levels deep "
        "(parentheses, signs or function calls)"
    )


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "expression",
    [
        "9**9**9",
        "10**10**10",
        "(2**1000)**1000",
        "2**3**4**5",
        "2**(10**400)",
        "10**4000",
        "(-10)**5000",
        "10**3999 * 10**3999",
        "(10**2000)**2",
        "9**(9**9) - 1",
        "1" + "*10**3999" * 2,
        "2" + "**2" * 300,
        "９**９**９",
        "9⁹⁹⁹⁹",
    ],
)
def test_huge_integer_results_are_refused_quickly(expression):
    assert calculation_error(expression).endswith("is too large (over 4000 digits)")


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("'9'*100000", 'unexpected character "\'" at position 0 of "\'9\'*100000"'),
        (
            "9" * (MAX_LENGTH + 1),
            f"expression too long: {MAX_LENGTH + 1:,} characters (limit 1,000)",
        ),
        ("-" * 500 + "1", f"the expression is nested more than {MAX_DEPTH} levels deep"),
        ("round(5, -10**9)", "round: digits must be an integer from -100 to 100"),
        ("1.5**100000", "the result is too large"),
        ("1e3999 * 100", "the result is too large (over 4000 digits)"),
        ("1e99999 + 1", "'1e99999' is too large (over 4000 digits)"),
        ("exp(10000)", "the result is too large (over 4000 digits)"),
        ("sqrt(2)**(10**3999)", "the result is too large (over 4000 digits)"),
        ("exp(-10**3999)", "the result is too small to show (below 1e-999999999999999999)"),
        ("0.5**(10**30)", "the result is too small to show"),
        ("(1+10**-3990)**(10**3999)", "the result is too large (over 4000 digits)"),
        ("(1-10**-3990)**(10**3999)", "the exponent is too large to compute this power"),
        ("exp(1000) % 7", "% takes values within a float's range (about 1e-308 to 1e308)"),
        ("exp(-1000) // 1", "// takes values within a float's range"),
    ],
)
def test_other_costly_inputs_are_refused_quickly(expression, message):
    assert message in calculation_error(expression)


@pytest.mark.parametrize(
    ("expression", "result"),
    [
        ("0.1+0.2", "0.3"),
        ("0.3-0.1", "0.2"),
        ("-0.1-0.2", "-0.3"),
        ("1.1*1.1", "1.21"),
        ("0.1**3", "0.001"),
        ("1/3*3", "1"),
        ("10**-2 + 0.005", "0.015"),
        ("2.5e3 + 1e-3", "2500.001"),
        ("1_000.25 * 4", "4001"),
        ("1e20 * 3", "300000000000000000000"),
        ("7.5 // 2 + 1.5 % 1", "3.5"),
        ("round(2.675, 2)", "2.68"),  # 2.675 as a float is just below, and rounds to 2.67
        ("max(0.1+0.2, 0.3)", "0.3"),
        ("0.5**20", "0.00000095367431640625"),
        # A division that never ends prints as the nearest float.
        ("1/3", "0.3333333333333333"),
        ("-2/3", "-0.6666666666666666"),
        # Irrational steps are floating point, and so is what is computed from them.
        ("0.1 + sqrt(4)", "2.1"),
        ("pi - 3.1", "0.04159265358979303"),
        ("4**0.5", "2"),
        # Too long to keep exact: computed approximately.
        ("1e-5000 + 1", "1"),
    ],
)
def test_decimals_are_exact(expression, result):
    assert calculate(expression) == result


def test_exact_decimals_print_in_full_up_to_the_bound():
    # 0.5**4000 is 5**4000 / 10**4000: 4000 decimal places, the last one a 5.
    assert calculate("0.5**4000") == "0." + str(5**4000).zfill(4000)
    assert calculate("1.0000001**5000").startswith("1.0005001")


def test_the_bounds_leave_room_for_large_exact_results():
    assert len(calculate("9**4000")) == 3817
    assert calculate("1**(10**100)") == "1"
    assert calculate("(-1)**(10**100 + 1)") == "-1"
    assert calculate("0.5**(10**9)") == "2.167797967616934e-301029996"


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("1/0", "cannot evaluate '1/0': division by zero"),
        ("1 // 0", "cannot evaluate '1 // 0': division by zero"),
        ("5 % 0.0", "cannot evaluate '5 % 0.0': division by zero"),
        ("0**-1", "cannot evaluate '0**-1': division by zero"),
        ("sqrt(-1)", "cannot evaluate 'sqrt(-1)': math domain error"),
        ("(-8)**(1/3)", "cannot evaluate '(-8)**(1/3)': the result is not a real number"),
        ("", "empty expression: give one such as 12*(3+4)"),
        ("``", "empty expression: give one such as 12*(3+4)"),
        ("2 +", "cannot parse '2 +': invalid syntax"),
        ("1,000 + 1", "write numbers without thousands separators (1000, not 1,000)"),
        ("x + 1", "unknown name 'x'; known: operators + - * / // % **, pi, e, abs, round"),
        ("2(3)", "unsupported: '2(3)'"),
        ("True + 1", "'True' is not a number"),
        ("not 1", "unsupported: 'not 1'"),
        ("1 if 2 else 3", "unsupported: '1 if 2 else 3'"),
        ("1 < 2", "unexpected character '<' at position 2 of '1 < 2'"),
        ("2j", "unsupported: '2j'"),
        ("sqrt(1, 2)", "sqrt takes 1 argument, got 2"),
        ("log()", "log takes 1 to 2 arguments, got 0"),
        ("abs.real", "unsupported: 'abs.real'"),
        ("__import__(1)", "unsupported: '__import__(1)'"),
        ("a = 1", "unexpected character '=' at position 2 of 'a = 1'"),
        ("[1][0]", "unexpected character '[' at position 0"),
    ],
)
def test_errors_say_what_was_wrong(expression, message):
    assert message in calculation_error(expression)


def test_calculator_description_keeps_its_promise():
    calculator = Calculator()
    assert calculator.name == "calculator"
    assert "exact (0.1+0.2 gives 0.3)" in calculator.description
    assert calculate("0.1+0.2") == "0.3"


def test_calculator_async():
    assert asyncio.run(Calculator().acall("6*7")) == "42"


# --- RandomNumber --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "low", "high"),
    [
        ("", 1, 100),
        ("告诉我一个随机数", 1, 100),
        ("give me a random number", 1, 100),
        ("1-6", 1, 6),
        ("1 - 6", 1, 6),
        ("1 to 6", 1, 6),
        ("between 1 and 6", 1, 6),
        ("1到6之间", 1, 6),
        ("-5 to 5", -5, 5),
        ("between -10 and -8", -10, -8),
        ("-10--8", -10, -8),
        ("6", 1, 6),
        ("7-7", 7, 7),
        # Read as every built-in tool reads input: NFKC, any dash as "-".
        ("１－６", 1, 6),
        ("１到６", 1, 6),
        ("1~6", 1, 6),
        ("1～6", 1, 6),
        ("1〜6", 1, 6),
        ("1–6", 1, 6),
        ("1 — 6", 1, 6),
        ("between −5 and 5", -5, 5),
        ("－３ to ３", -3, 3),
        ("٣ to ٩", 3, 9),
        ("1,000 to 1,005", 1000, 1005),
        ("roll a d6", 1, 6),
        # Bounds in either order.
        ("6-1", 1, 6),
        ("5 to -5", -5, 5),
        ("-8 to -10", -10, -8),
        ("-" + "9" * 18 + " to " + "9" * 18, 1 - 10**18, 10**18 - 1),
    ],
)
def test_random_number_stays_in_the_asked_range(text, low, high):
    tool = RandomNumber(seed=7)
    values = {int(tool.call(text)) for _ in range(300)}
    assert min(values) >= low
    assert max(values) <= high
    if high - low < 10:
        assert values == set(range(low, high + 1))
    else:
        assert len(values) > 10


def test_random_number_is_repeatable_with_a_seed():
    def draws(seed):
        tool = RandomNumber(seed=seed)
        return [tool.call("1-1000000") for _ in range(5)]

    assert draws(42) == draws(42)
    assert draws(42) != draws(43)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1-2-3", "expected a range such as \"1-100\", got 3 numbers in '1-2-3'"),
        ("１－２－３", "expected a range such as \"1-100\", got 3 numbers in '1-2-3'"),
        ("1.5 to 3", "the range must be whole numbers, got '1.5 to 3'"),
        ("１．５ to 3", "the range must be whole numbers, got '1.5 to 3'"),
        ("1 to " + "9" * 19, "range bounds must be within ±10^18"),
        ("1 to " + "９" * 19, "range bounds must be within ±10^18"),
        ("0", "one number N means 1 to N, so N must be at least 1, got 0; give both bounds, such"),
        ("-5", "one number N means 1 to N, so N must be at least 1, got -5"),
    ],
)
def test_random_number_bad_ranges(text, message):
    with pytest.raises(ToolError) as caught:
        RandomNumber().call(text)
    assert str(caught.value).startswith(message)


# --- CurrentTime ---------------------------------------------------------------------------

FIXED = datetime(2025, 3, 14, 7, 9, 26, 123456, tzinfo=UTC)  # a Friday


def fixed_time(text):
    return CurrentTime(clock=lambda: FIXED).call(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("UTC", "2025-03-14T07:09:26+00:00 Friday (UTC)"),
        ("utc", "2025-03-14T07:09:26+00:00 Friday (UTC)"),
        ("Asia/Shanghai", "2025-03-14T15:09:26+08:00 Friday (Asia/Shanghai)"),
        ('"Asia/Shanghai"', "2025-03-14T15:09:26+08:00 Friday (Asia/Shanghai)"),
        ("America/Los_Angeles", "2025-03-14T00:09:26-07:00 Friday (America/Los_Angeles)"),
        ("Pacific/Kiritimati", "2025-03-14T21:09:26+14:00 Friday (Pacific/Kiritimati)"),
        ("Pacific/Pago_Pago", "2025-03-13T20:09:26-11:00 Thursday (Pacific/Pago_Pago)"),
        ("Japan", "2025-03-14T16:09:26+09:00 Friday (Japan)"),
        ("UTC+8", "2025-03-14T15:09:26+08:00 Friday (UTC+08:00)"),
        ("GMT-05:30", "2025-03-14T01:39:26-05:30 Friday (UTC-05:30)"),
        ("+0545", "2025-03-14T12:54:26+05:45 Friday (UTC+05:45)"),
    ],
)
def test_current_time_in_a_zone(text, expected):
    assert fixed_time(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A zone within other words, in any case (once ignored: local time was shown).
        ("time in asia/shanghai please", "2025-03-14T15:09:26+08:00 Friday (Asia/Shanghai)"),
        ("ASIA/SHANGHAI", "2025-03-14T15:09:26+08:00 Friday (Asia/Shanghai)"),
        ("what time is it in Japan?", "2025-03-14T16:09:26+09:00 Friday (Japan)"),
        ("现在 America/New_York 几点了?", "2025-03-14T03:09:26-04:00 Friday (America/New_York)"),
        ("time at UTC + 8 now", "2025-03-14T15:09:26+08:00 Friday (UTC+08:00)"),
        ("the time in utc", "2025-03-14T07:09:26+00:00 Friday (UTC)"),
        # A city that ends an IANA name.
        ("Tokyo", "2025-03-14T16:09:26+09:00 Friday (Asia/Tokyo)"),
        ("new york", "2025-03-14T03:09:26-04:00 Friday (America/New_York)"),
        # Read as every built-in tool reads input (NFKC).
        ("ＵＴＣ＋８", "2025-03-14T15:09:26+08:00 Friday (UTC+08:00)"),
        ("Ａｓｉａ／Ｔｏｋｙｏ", "2025-03-14T16:09:26+09:00 Friday (Asia/Tokyo)"),
    ],
)
def test_current_time_finds_the_zone_in_what_it_is_given(text, expected):
    assert fixed_time(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "  ", "now", "现在几点了?", "what time is it?", "today", "how to cook a turkey"],
)
def test_current_time_is_utc_labelled_utc_when_no_zone_is_named(text):
    # The machine's own zone says nothing about the user's, and must not pass as "local".
    assert fixed_time(text) == "2025-03-14T07:09:26+00:00 Friday (UTC)"


def test_current_time_takes_a_naive_clock_as_the_machines_local_time():
    naive = datetime(2025, 1, 1, 12, 0, 0)
    shown = CurrentTime(clock=lambda: naive).call("")
    expected = naive.astimezone().astimezone(UTC)
    assert shown == f"{expected.isoformat(timespec='seconds')} Wednesday (UTC)"


def test_current_time_default_clock_is_now():
    before = datetime.now().astimezone().replace(microsecond=0)
    shown = CurrentTime().call("UTC")
    shown_time = datetime.fromisoformat(shown.split(" ")[0])
    assert shown_time.utcoffset() == timedelta(0)
    assert before - timedelta(seconds=1) <= shown_time <= datetime.now(UTC)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Mars/Olympus_Mons", "unknown time zone 'Mars/Olympus_Mons'"),
        ("Asia/Shangai", "unknown time zone 'Asia/Shangai'"),
        ("XYZ", "unknown time zone 'XYZ'"),
        ("../../etc/passwd", "unknown time zone '../../etc/passwd'"),
        ("UTC+15", "time zone offset 'UTC+15' is out of range (at most ±14:00)"),
        ("+08:75", "time zone offset '+08:75' is out of range"),
        ("asia/shangai", "unknown time zone 'asia/shangai' (did you mean Asia/Shanghai"),
        ("time in Asia/Shangai?", "unknown time zone 'Asia/Shangai' (did you mean Asia/Shanghai"),
        ("Asia/" + "x" * 10_000, "unknown time zone 'Asia/xxxxxxxx"),
    ],
)
def test_current_time_unknown_zone(text, message):
    with pytest.raises(ToolError) as caught:
        fixed_time(text)
    assert str(caught.value).startswith(message)
    # Every refusal says how to write a zone.
    assert "give an IANA name such as 'Asia/Shanghai'" in str(caught.value)
    assert len(str(caught.value)) < 400


@pytest.mark.parametrize("tool", [Calculator(), RandomNumber(), CurrentTime()], ids=repr)
def test_builtin_descriptions_are_written_for_a_model_not_for_keyword_matching(tool):
    # Real models read descriptions: no list of search words (Chinese or English) in them;
    # the offline model keeps its own keywords for the built-in tools.
    summary = tool.description.split(". ")[0]
    assert "(" not in summary
    assert all(not "\u4e00" <= char <= "\u9fff" for char in tool.description)
    assert "Input:" in tool.description


def _approximately_equal(shown: str, exact: Fraction | Decimal) -> bool:
    """Whether `shown` is `exact` to 15 significant digits (computed here independently)."""
    with localcontext(Context(prec=60, Emax=MAX_EMAX, Emin=MIN_EMIN)):
        value = Decimal(shown)
        target = (
            exact if isinstance(exact, Decimal) else Decimal(exact.numerator) / exact.denominator
        )
        return value != 0 and abs(value - target) <= abs(target) * Decimal("1e-15")


def _high_precision(operation):
    with localcontext(Context(prec=60, Emax=MAX_EMAX, Emin=MIN_EMIN)):
        return operation()


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("expression", "exact"),
    [
        # Beyond a float's range, small: once printed as 0.
        ("10**-4001", Fraction(1, 10**4001)),
        ("10**-4000", Fraction(1, 10**4000)),
        ("1e-5000", Fraction(1, 10**5000)),
        ("-1e-5000", Fraction(-1, 10**5000)),
        ("(10**-2001)**2", Fraction(1, 10**4002)),
        ("0.5**5000", Fraction(1, 2**5000)),
        ("2**-5000", Fraction(1, 2**5000)),
        ("2**-10000", Fraction(1, 2**10000)),
        ("0.5**(4 * 10**5)", _high_precision(lambda: Decimal("0.5") ** 400000)),
        ("(-1/2)**(10**9+1)", _high_precision(lambda: -(Decimal("0.5") ** (10**9 + 1)))),
        ("exp(-1000)", _high_precision(lambda: Decimal(-1000).exp())),
        ("-exp(-1000)", _high_precision(lambda: -Decimal(-1000).exp())),
        ("1/exp(1000)", _high_precision(lambda: Decimal(-1000).exp())),
        ("pi * 1e-400", _high_precision(lambda: Decimal(math.pi) / Decimal(10) ** 400)),
        ("abs(-exp(-1000))", _high_precision(lambda: Decimal(-1000).exp())),
        ("min(exp(-1000), 1)", _high_precision(lambda: Decimal(-1000).exp())),
        ("sqrt(1e-400)", Fraction(1, 10**200)),
        ("exp(-745.2)", _high_precision(lambda: Decimal("-745.2").exp())),
        # Beyond a float's range, large: once refused as too large.
        ("exp(1000)", _high_precision(lambda: Decimal(1000).exp())),
        ("1e308 * 10.0 * pi", _high_precision(lambda: Decimal(10) ** 309 * Decimal(math.pi))),
        ("(10**3000)**0.5", Fraction(10**1500)),
        ("sqrt(10**3998)", Fraction(10**1999)),
        ("10**3000 / 3", Fraction(10**3000, 3)),
        ("(-exp(1000))**3", _high_precision(lambda: -(Decimal(3000).exp()))),
        (
            "10**3999 / 7 * sqrt(2)",
            _high_precision(lambda: Decimal(10**3999) / 7 * Decimal(2).sqrt()),
        ),
        # Computed beyond a float's range, shown within it.
        ("log(0.1**400)", _high_precision(lambda: Decimal("1e-400").ln())),
        ("log(1e-400, 10)", Fraction(-400)),
        ("exp(-1000) * exp(1000)", Fraction(1)),
        ("(1+10**-99)**(10**99)", _high_precision(lambda: Decimal(1).exp())),
        ("(1-10**-99)**(10**99)", _high_precision(lambda: Decimal(-1).exp())),
    ],
)
def test_results_beyond_a_float_keep_their_size(expression, exact):
    assert _approximately_equal(calculate(expression), exact)


@pytest.mark.parametrize(
    ("expression", "shown"),
    [
        ("10**-4001", "1e-4001"),
        ("exp(-1000)", "5.0759588975494568e-435"),
        ("exp(1000)", "1.970071114017047e+434"),
        ("sqrt(10**3998)", "1e+1999"),
        # Exact results print in full, however many zeros; zero has no sign.
        ("10**-3", "0.001"),
        ("1e-300 * 1e-10", "0." + "0" * 309 + "1"),
        ("-0", "0"),
        ("-0.0", "0"),
        ("0 * -1", "0"),
        ("-(0.0 * sqrt(2))", "0"),
        ("-exp(-1000) * 0", "0"),
    ],
)
def test_how_sizes_are_shown(expression, shown):
    assert calculate(expression) == shown
