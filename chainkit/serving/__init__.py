"""A chain or agent behind HTTP: `create_app(chain, settings)` is an ASGI application
(Starlette), which `chainkit serve` runs under uvicorn. Starlette and uvicorn come with the
`serve` extra and are imported only when an app is made, never with chainkit.
"""

from chainkit.serving import errors as errors
from chainkit.serving.app import create_app
from chainkit.serving.settings import ServerSettings

__all__ = ["ServerSettings", "create_app", "errors"]
