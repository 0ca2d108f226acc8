"""Output parsers: a model's reply read into a value (text, JSON, a list, yes or no, one of
some choices, a date and time, a regex's groups, or any type of your own), whole or while it
streams, with instructions for the prompt. `Parser` is the contract.

A reply that does not read raises `ParseError` (exported: a model's answer failing); the
errors of a parser built wrong are in `chainkit.parsers.errors`.
"""

from chainkit.parsers import errors as errors
from chainkit.parsers.base import Parser, PartialReader
from chainkit.parsers.boolean import BooleanParser
from chainkit.parsers.choice import ChoiceParser
from chainkit.parsers.datetimes import DatetimeParser
from chainkit.parsers.errors import ParseError
from chainkit.parsers.json_object import JSONParser
from chainkit.parsers.lists import ListParser, ListStyle
from chainkit.parsers.regex import RegexParser
from chainkit.parsers.text import TextParser
from chainkit.parsers.typed import TypedParser

__all__ = [
    "BooleanParser",
    "ChoiceParser",
    "DatetimeParser",
    "JSONParser",
    "ListParser",
    "ListStyle",
    "ParseError",
    "Parser",
    "PartialReader",
    "RegexParser",
    "TextParser",
    "TypedParser",
]
