"""The root of every error chainkit raises on purpose.

Each package keeps its own errors in its `errors.py`; each derives from `ChainkitError` and
keeps a standard base too (ValueError, TypeError, TimeoutError, …), so both
`except chainkit.ChainkitError` and the usual `except ValueError` catch it. README's "Errors"
section shows the tree.
"""


class ChainkitError(Exception):
    """Base of every exception chainkit raises on purpose."""
