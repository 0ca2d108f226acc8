"""The built-in tools: a calculator, a random number and the current time."""

from chainkit.tools.builtin.calculator import Calculator
from chainkit.tools.builtin.current_time import CurrentTime
from chainkit.tools.builtin.random_number import RandomNumber

__all__ = ["Calculator", "CurrentTime", "RandomNumber"]
