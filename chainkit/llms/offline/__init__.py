"""The offline model: answers from the question and the offered tools alone, with no network,
so that `chainkit run` and the examples work anywhere."""

from chainkit.llms.offline.model import OfflineModel

__all__ = ["OfflineModel"]
