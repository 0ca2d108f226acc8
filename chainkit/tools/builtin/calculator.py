"""Calculator: arithmetic on a model's expression, by walking its syntax tree (never eval).

Supported: + - * / // % ** (also written ^), unary + and -, parentheses, int and float
literals (1_000, 1e3, 0x1f), the constants pi and e, and the functions abs, round, min, max,
sqrt, floor, ceil, exp and log (log(x) is natural, log(x, base) any base).

Model formatting is forgiven: surrounding quotes, backticks or a code fence, `×` `÷`, `−` and
other dashes, full-width digits and operators (the text is read as every built-in tool reads
it: NFKC-normalised), superscript powers (`2³`), and a trailing `=` or `?`. Thousands
separators are not: `1,000` is rejected with a hint, since a comma also separates function
arguments (`max(1,000)`).

Results: integers and decimals are exact. A decimal literal is the fraction it writes (0.1 is
1/10, not the nearest float), and + - * / // % and integer powers keep fractions exact, so
`0.1+0.2` gives `0.3` and `1/3*3` gives `1`. An exact result prints in full when its decimals
end within 4000 places (`7/2` gives `3.5`); one that never ends (`1/3`) prints as the nearest
float. sqrt, exp, log, pi, e and fractional powers are floating point, and so is anything
computed from them: a float with an integral value below 2**53 prints as an integer
(`sqrt(16)` gives `4`), others in Python's shortest round-trip form. A fraction whose numerator
or denominator would pass 4000 digits (`1.0000001**5000`) is computed approximately instead.

No result is rounded to 0 or to infinity. An approximate value beyond a float's range (about
1e-308 to 1e308) is kept as a decimal float of 17 significant digits whose exponent may go down
to -999999999999999999, and prints in scientific notation: `10**-4001` gives `1e-4001`,
`exp(-1000)` gives `5.0759588975494568e-435`, `exp(1000)` gives `1.970071114017047e+434`.

Every cost is bounded before it is paid: the expression is at most 1000 characters and nested
(parentheses, signs, function calls) at most 100 levels deep, and a power whose result would
reach 10**4000 is refused before it is computed (`9**9**9`), as is any other result that large,
exact or not (integers are limited to 4000 digits, within Python's limit for turning integers
into text). `//` and `%` take values within a float's range only. Each refusal, division by
zero and a result that is not a real number is a ToolError naming the problem, and a value out
of range names the part it came from (`1/10**4000`: "'10**4000' is too large").
"""

from __future__ import annotations

import ast
import decimal
import itertools
import math
import operator
import string
import sys
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any, TypeGuard

from chainkit._text import counted, quoted
from chainkit.tools._input import normalized
from chainkit.tools.base import Tool, ToolError

_QUOTED = 60
"""The most of a model's input an error quotes."""

MAX_LENGTH = 1000
MAX_DEPTH = 100
MAX_DIGITS = 4000
_INT_LIMIT = 10**MAX_DIGITS
# Input longer than this cannot trim down to MAX_LENGTH characters, whatever fences or
# spaces surround the expression.
_MAX_INPUT = 100 * MAX_LENGTH
_MAX_ROUND_DIGITS = 100
_EXACT_FLOAT_INTS = 2**53
_QUOTES = "\"'`"
_ALLOWED = frozenset(string.ascii_letters + string.digits + "+-*/%().,_ \t\n")
_SPELLINGS = str.maketrans(
    {
        "×": "*",
        "✕": "*",
        "·": "*",
        "÷": "/",
        "^": "**",
    }
)
# NFKC would read `2³` as `23`, and `10₂` as `102`: superscripts are powers, subscripts refused.
_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁽⁾", "0123456789+-()")
_SUBSCRIPTS = frozenset("₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎")

Number = int | Fraction | float | Decimal
# Approximate values beyond a float's range: 17 significant digits (a float's round-trip
# precision), results below 10**MAX_DIGITS, and an exponent as small as the module allows.
# Every operation on a Decimal goes through this context, never the thread's own.
_WIDE = decimal.Context(
    prec=17,
    Emax=MAX_DIGITS - 1,
    Emin=decimal.MIN_EMIN,
    traps=[decimal.InvalidOperation, decimal.DivisionByZero, decimal.Overflow, decimal.Underflow],
)
# Floats with exponents inside these bounds are normal: their full precision is kept.
_FLOAT_MIN = sys.float_info.min
_FLOAT_MAX = sys.float_info.max
_FLOAT_EXPONENTS = range(-307, 308)
_FLOAT_INT_LIMIT = 10**307
_MAX_INEXACT_EXPONENT_DIGITS = 100
_NEAR_ONE = 1e-6
_LOG10_LN10 = math.log10(math.log(10))
_FLOAT_MAX_EXPONENT = 308
_TOO_LARGE = f"too large (over {MAX_DIGITS} digits)"
_TOO_SMALL = "too small to show (below 1e-999999999999999999)"


class _OutOfRangeError(ToolError):
    """A value is too large or too small (`size` says which); `part` names the part of the
    expression it came from, unless it is the whole expression's result."""

    def __init__(self, size: str, part: str | None = None) -> None:
        super().__init__(f"{part} is {size}" if part else f"the result is {size}")
        self.size = size
        self.part = part


@dataclass(slots=True, frozen=True)
class _Function:
    apply: Callable[..., object]  # checked by _checked like any other result
    min_args: int
    max_args: int


def _round(value: Number, digits: Number | None = None) -> object:
    if digits is not None and (not isinstance(digits, int) or abs(digits) > _MAX_ROUND_DIGITS):
        # round(n, -10**9) would compute 10**(10**9) first.
        raise ToolError(f"round: digits must be an integer from -100 to 100, got {digits!r}")
    if isinstance(value, Decimal):
        # Only values beyond a float's range are Decimals: a huge one is a whole number already
        # and a tiny one rounds to 0 at any number of digits allowed.
        if value.adjusted() < 0:
            return 0
        return int(value) if digits is None else value
    return round(value) if digits is None else round(value, digits)


def _absolute(value: Number) -> object:
    return _WIDE.abs(value) if isinstance(value, Decimal) else abs(value)


def _negative(value: Number) -> object:
    return _WIDE.minus(value) if isinstance(value, Decimal) else -value


def _approximate(value: Number) -> float | Decimal:
    """`value` as a float when one holds it at full precision, else as a Decimal."""
    if isinstance(value, float | Decimal):
        return value
    if isinstance(value, int):
        return float(value) if -_FLOAT_INT_LIMIT < value < _FLOAT_INT_LIMIT else _decimal(value)
    try:
        nearest = float(value)
    except OverflowError:
        nearest = math.inf
    if value == 0 or _FLOAT_MIN <= abs(nearest) <= _FLOAT_MAX:
        return nearest
    return _decimal(value)


def _approximately(
    on_floats: Callable[..., object], on_decimals: Callable[..., Decimal], *args: Number
) -> object:
    """`on_floats(*args)` on the arguments as floats; `on_decimals` on them as Decimals when
    one is beyond a float's range or the float result would be (0, subnormal or infinite:
    recomputed, so that no result is lost to rounding)."""
    values = [_approximate(arg) for arg in args]
    if all(isinstance(value, float) for value in values):
        try:
            result = on_floats(*values)
        except OverflowError:
            result = math.inf
        # A complex result (a fractional power of a negative number) is refused by _checked.
        if not isinstance(result, float) or _FLOAT_MIN <= abs(result) <= _FLOAT_MAX:
            return result
    return on_decimals(*(_decimal(arg) for arg in args))


def _decimal(value: Number) -> Decimal:
    """`value` as a Decimal: a float exactly, an exact number to 17 digits (a longer operand
    only costs time)."""
    if isinstance(value, Decimal):
        return value
    if isinstance(value, float):
        return Decimal(value)
    if isinstance(value, int):
        return _WIDE.create_decimal(value)
    return _WIDE.divide(Decimal(value.numerator), Decimal(value.denominator))


def _sqrt(value: Number) -> object:
    return _approximately(math.sqrt, _WIDE.sqrt, value)


def _exp(value: Number) -> object:
    return _approximately(math.exp, _WIDE.exp, value)


def _log(value: Number, base: Number | None = None) -> object:
    if base is None:
        return _approximately(math.log, _WIDE.ln, value)
    return _approximately(math.log, _log_with_base, value, base)


def _log_with_base(value: Decimal, base: Decimal) -> Decimal:
    return _WIDE.divide(_WIDE.ln(value), _WIDE.ln(base))


def _wide_power(base: Decimal, exponent: Decimal) -> Decimal:
    if not base and exponent < 0:
        raise ZeroDivisionError  # Decimal answers Infinity here without a signal
    return _WIDE.power(base, exponent)


_FUNCTIONS: dict[str, _Function] = {
    "abs": _Function(_absolute, 1, 1),
    "round": _Function(_round, 1, 2),
    "min": _Function(lambda *values: min(values), 1, 100),
    "max": _Function(lambda *values: max(values), 1, 100),
    "sqrt": _Function(_sqrt, 1, 1),
    "floor": _Function(math.floor, 1, 1),
    "ceil": _Function(math.ceil, 1, 1),
    "exp": _Function(_exp, 1, 1),
    "log": _Function(_log, 1, 2),
}
_CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}


class Calculator(Tool):
    """Evaluates an arithmetic expression; see the module docstring for what it accepts."""

    name = "calculator"
    blocking = False
    description = (
        "Evaluates an arithmetic expression. Integers and decimals are exact (0.1+0.2 gives "
        "0.3); sqrt, exp, log, pi, e and fractional powers are floating point. Input: one "
        "expression such as 12*(3+4), 2**10 or sqrt(2)/3; supports + - * / // % ** ( ), pi, e, "
        "abs, round, min, max, sqrt, floor, ceil, exp, log."
    )

    def call(self, input: str) -> str:
        expression = normalize(input)
        try:
            tree = ast.parse(expression, mode="eval")
        except SyntaxError as error:
            raise ToolError(f"cannot parse {quoted(expression, _QUOTED)}: {error.msg}") from None
        try:
            return _format(_Evaluator(expression).evaluate(tree.body, 0))
        except ToolError as error:
            raise ToolError(f"cannot evaluate {quoted(expression, _QUOTED)}: {error}") from None


def normalize(text: str) -> str:
    """The expression in `text`, with model formatting undone; ToolError if it cannot be one."""
    if isinstance(text, str) and len(text) > _MAX_INPUT:  # refused before reading it
        raise ToolError(
            f"input too long: {counted(len(text), 'character')} (an expression has at most "
            f"{MAX_LENGTH:,})"
        )
    text = normalized(text, before=_powers_from_superscripts)
    expression = _unwrap(text.strip()).rstrip("=? \t\n").translate(_SPELLINGS).strip()
    if not expression:
        raise ToolError("empty expression: give one such as 12*(3+4)")
    if len(expression) > MAX_LENGTH:
        raise ToolError(
            f"expression too long: {counted(len(expression), 'character')} (limit {MAX_LENGTH:,})"
        )
    for position, char in enumerate(expression):
        if char not in _ALLOWED:
            raise ToolError(
                f"unexpected character {char!r} at position {position} of "
                f"{quoted(expression, _QUOTED)}"
            )
    return expression


def _powers_from_superscripts(text: str) -> str:
    """`text` with each run of superscripts written as a power: `10⁻³` as `10**(-3)`."""
    parts: list[str] = []
    for is_superscript, chars in itertools.groupby(text, lambda char: ord(char) in _SUPERSCRIPTS):
        run = "".join(chars)
        if is_superscript:
            parts.append(f"**({run.translate(_SUPERSCRIPTS)})")
        elif _SUBSCRIPTS.isdisjoint(run):
            parts.append(run)
        else:
            subscript = next(char for char in run if char in _SUBSCRIPTS)
            raise ToolError(f"unexpected subscript {subscript!r} in {quoted(text, _QUOTED)}")
    return "".join(parts)


def _unwrap(text: str) -> str:
    """`text` without a surrounding code fence and matching quotes or backticks."""
    if len(text) >= 6 and text.startswith("```") and text.endswith("```"):
        text = text[3:-3].strip()
        first_line, newline, rest = text.partition("\n")
        if newline and first_line.strip().isidentifier():
            text = rest  # the fence's language tag
    while len(text) >= 2 and text[0] == text[-1] and text[0] in _QUOTES:
        text = text[1:-1].strip()
    return text


def _format(value: Number) -> str:
    if isinstance(value, Fraction):
        exact = _decimal_text(value)
        if exact is not None:
            return exact
        value = _approximate(value)
    if isinstance(value, Decimal):
        return format(_WIDE.normalize(value), "e")  # 1e-4001, 5.0759588975494568e-435
    if isinstance(value, float) and value.is_integer() and abs(value) < _EXACT_FLOAT_INTS:
        return str(int(value))
    return repr(value)


def _decimal_text(value: Fraction) -> str | None:
    """`value` written out in full, if its decimals end within MAX_DIGITS places."""
    scaled, remainder = divmod(abs(value.numerator) * _INT_LIMIT, value.denominator)
    if remainder:
        return None
    whole, decimals = divmod(scaled, _INT_LIMIT)
    sign = "-" if value < 0 else ""
    # Not an integer (see _checked), so some decimal is non-zero and the point stays.
    return f"{sign}{whole}.{decimals:0{MAX_DIGITS}d}".rstrip("0")


def _exact(value: Number) -> TypeGuard[int | Fraction]:
    return isinstance(value, int | Fraction)


def _checked(value: object) -> Number:
    """`value` if it is a real number of bounded size: an integral fraction as an int, a
    fraction too long to keep exact approximately, a Decimal within a float's range as a
    float; ToolError otherwise."""
    if isinstance(value, Fraction):
        if value.denominator == 1:
            value = value.numerator
        elif abs(value.numerator) < _INT_LIMIT and value.denominator < _INT_LIMIT:
            return value
        else:
            value = _approximate(value)
    if isinstance(value, Decimal):
        # Infinity only comes from a Decimal operation that overflowed without trapping.
        if value.is_infinite():
            raise _OutOfRangeError(_TOO_LARGE)
        return float(value) if value.is_zero() or value.adjusted() in _FLOAT_EXPONENTS else value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ToolError("the result is not a real number")
    if isinstance(value, int):
        if -_INT_LIMIT < value < _INT_LIMIT:
            return value
        raise _OutOfRangeError(_TOO_LARGE)
    if math.isnan(value):
        raise ToolError("the result is not a number")
    if math.isinf(value):
        raise _OutOfRangeError(_TOO_LARGE)
    return value


def _power(base: Number, exponent: Number) -> object:
    if not (_exact(base) and isinstance(exponent, int)):
        return _approximately(operator.pow, _wide_power, base, exponent)
    exact_base = Fraction(base)
    # The exact power's numerator or denominator has about |exponent| * log10(size) digits:
    # check before computing it. A size of 2 or more gives over 0.3 digits per unit of
    # exponent, so a larger exponent than 4 * MAX_DIGITS is never exact (it may not even fit
    # a float).
    size = max(abs(exact_base.numerator), exact_base.denominator)
    steps = abs(exponent)
    if size > 1 and (steps > 4 * MAX_DIGITS or steps * math.log10(size) > MAX_DIGITS):
        return _inexact_power(exact_base, exponent)
    return exact_base**exponent


def _inexact_power(base: Fraction, exponent: int) -> Decimal:
    """`base ** exponent` to 17 digits, for a power too long to keep exact; its size is checked
    first, so a result past the bounds costs nothing."""
    magnitude = _log10_power(base, exponent)
    if magnitude >= MAX_DIGITS:
        raise _OutOfRangeError(_TOO_LARGE)
    if magnitude < _WIDE.Etiny():
        raise _OutOfRangeError(_TOO_SMALL)
    digits = len(str(abs(exponent)))
    if digits > _MAX_INEXACT_EXPONENT_DIGITS:
        raise ToolError(
            f"the exponent is too large to compute this power: at most "
            f"{_MAX_INEXACT_EXPONENT_DIGITS} digits unless the result is exact"
        )
    # Each squaring may lose a digit: keep as many more as the exponent has.
    precise = _WIDE.copy()
    precise.prec += digits
    power = precise.power(precise.divide(Decimal(base.numerator), base.denominator), exponent)
    return _WIDE.plus(power)


def _log10_power(base: Fraction, exponent: int) -> float:
    """log10 |base ** exponent| to about six digits, without computing the power (±inf when
    a float cannot hold it)."""
    log_size = math.log10(abs(base.numerator)) - math.log10(base.denominator)
    if abs(log_size) > _NEAR_ONE:
        try:
            return log_size * exponent
        except OverflowError:  # the exponent is beyond a float
            return math.inf if (log_size > 0) == (exponent > 0) else -math.inf
    # |base| is so near 1 that the difference of two logarithms has lost its digits; there
    # log10 |base| is (|base| - 1) / ln(10) to within a millionth of itself.
    excess = abs(base) - 1
    log_excess = math.log10(abs(excess.numerator)) - math.log10(excess.denominator)
    log_magnitude = math.log10(abs(exponent)) + log_excess - _LOG10_LN10
    size = 10.0**log_magnitude if log_magnitude < _FLOAT_MAX_EXPONENT else math.inf
    return size if (excess > 0) == (exponent > 0) else -size


def _divide(dividend: Number, divisor: Number) -> object:
    if _exact(dividend) and _exact(divisor):
        return Fraction(dividend) / divisor
    return _approximately(operator.truediv, _WIDE.divide, dividend, divisor)


def _floor_divide(dividend: Number, divisor: Number) -> object:
    return _float_only(operator.floordiv, "//", dividend, divisor)


def _modulo(dividend: Number, divisor: Number) -> object:
    return _float_only(operator.mod, "%", dividend, divisor)


def _float_only(
    operation: Callable[[Number, Number], object], symbol: str, left: Number, right: Number
) -> object:
    if _exact(left) and _exact(right):
        return operation(left, right)
    left, right = _approximate(left), _approximate(right)
    if isinstance(left, Decimal) or isinstance(right, Decimal):
        raise ToolError(f"{symbol} takes values within a float's range (about 1e-308 to 1e308)")
    return operation(left, right)


def _exact_literal(text: str, value: float) -> Number:
    """The number a decimal literal such as `0.1` or `2.5e-3` writes, as an exact fraction;
    rounded to 17 digits when its exponent is too far out to keep it exact."""
    literal = decimal.Decimal(text)
    exponent = literal.as_tuple().exponent
    if not isinstance(exponent, int):  # Python reads no literal as infinite or NaN
        return value
    if abs(exponent) > MAX_DIGITS:
        return _WIDE.plus(literal)
    return Fraction(literal)


def _arithmetic(
    operation: Callable[[Any, Any], object], on_decimals: Callable[[Decimal, Decimal], Decimal]
) -> Callable[[Number, Number], object]:
    """An operator: exact on exact numbers, else approximate (see `_approximately`)."""

    def apply(left: Number, right: Number) -> object:
        if _exact(left) and _exact(right):
            return operation(left, right)
        return _approximately(operation, on_decimals, left, right)

    return apply


# The left-associative operators; ** (right-associative) is walked separately.
_BINARY: dict[type[ast.operator], Callable[[Number, Number], object]] = {
    ast.Add: _arithmetic(operator.add, _WIDE.add),
    ast.Sub: _arithmetic(operator.sub, _WIDE.subtract),
    ast.Mult: _arithmetic(operator.mul, _WIDE.multiply),
    ast.Div: _divide,
    ast.FloorDiv: _floor_divide,
    ast.Mod: _modulo,
}


@dataclass(slots=True)
class _Evaluator:
    """Walks an expression's tree; `source` is for naming the parts it refuses.

    A chain of operators such as `1+2+...+9` is a tree as deep as it is long, so chains are
    walked in a loop: only parentheses, signs and function calls count as nesting.
    """

    source: str

    def evaluate(self, node: ast.expr, depth: int) -> Number:
        if depth > MAX_DEPTH:
            raise ToolError(
                f"the expression is nested more than {MAX_DEPTH} levels deep "
                "(parentheses, signs or function calls)"
            )
        try:
            try:
                return _checked(self._evaluate(node, depth + 1))
            except (OverflowError, decimal.Overflow):
                raise _OutOfRangeError(_TOO_LARGE) from None
            except decimal.Underflow:
                raise _OutOfRangeError(_TOO_SMALL) from None
        except _OutOfRangeError as error:
            if error.part is None and depth > 0:  # name the part, when it is not the whole
                raise _OutOfRangeError(error.size, self._text(node)) from None
            raise
        except ZeroDivisionError:  # decimal.DivisionByZero too
            raise ToolError("division by zero") from None
        except decimal.InvalidOperation:
            # A Decimal's square root or logarithm of a negative number, or its fractional power
            raise ToolError("the result is not a real number") from None
        except ValueError as error:
            # math.sqrt(-1), math.log(0): "math domain error"
            raise ToolError(str(error)) from None

    def _evaluate(self, node: ast.expr, depth: int) -> object:
        match node:
            case ast.Constant(value=bool()):
                raise ToolError(f"{self._text(node)} is not a number")
            case ast.Constant(value=int() as value):
                return value
            case ast.Constant(value=float() as value):
                text = ast.get_source_segment(self.source, node)
                return value if text is None else _exact_literal(text, value)
            case ast.Name(id=name) if name in _CONSTANTS:
                return _CONSTANTS[name]
            case ast.Name(id=name):
                raise ToolError(f"unknown name {name!r}; known: {_known_names()}")
            case ast.UnaryOp(op=ast.UAdd(), operand=operand):
                return self.evaluate(operand, depth)
            case ast.UnaryOp(op=ast.USub(), operand=operand):
                return _negative(self.evaluate(operand, depth))
            case ast.BinOp(op=ast.Pow()):
                return self._powers(node, depth)
            case ast.BinOp(op=op) if type(op) in _BINARY:
                return self._left_chain(node, depth)
            case ast.Call(func=ast.Name(id=name), args=args, keywords=[]) if name in _FUNCTIONS:
                return self._call(name, [self.evaluate(arg, depth) for arg in args])
            case ast.Tuple():
                raise ToolError(
                    "commas only separate function arguments; write numbers without "
                    "thousands separators (1000, not 1,000)"
                )
        raise ToolError(f"unsupported: {self._text(node)}; known: {_known_names()}")

    def _left_chain(self, node: ast.expr, depth: int) -> Number:
        """`a - b + c`, parsed as `(a - b) + c`, from left to right."""
        steps: list[tuple[ast.operator, ast.expr]] = []
        while isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            steps.append((node.op, node.right))
            node = node.left
        value = self.evaluate(node, depth)
        for op, right in reversed(steps):
            value = _checked(_BINARY[type(op)](value, self.evaluate(right, depth)))
        return value

    def _powers(self, node: ast.expr, depth: int) -> Number:
        """`a ** b ** c`, parsed as `a ** (b ** c)`, from right to left once all are known."""
        bases: list[Number] = []
        while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            bases.append(self.evaluate(node.left, depth))
            node = node.right
        value = self.evaluate(node, depth)
        for base in reversed(bases):
            value = _checked(_power(base, value))
        return value

    def _call(self, name: str, args: list[Number]) -> object:
        function = _FUNCTIONS[name]
        if not function.min_args <= len(args) <= function.max_args:
            expected = (
                counted(function.min_args, "argument")
                if function.min_args == function.max_args
                else f"{function.min_args} to {function.max_args} arguments"
            )
            raise ToolError(f"{name} takes {expected}, got {len(args)}")
        return function.apply(*args)

    def _text(self, node: ast.expr) -> str:
        return repr(ast.get_source_segment(self.source, node) or type(node).__name__)


def _known_names() -> str:
    return "operators + - * / // % **, " + ", ".join([*_CONSTANTS, *_FUNCTIONS])
