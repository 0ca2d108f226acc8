"""A chain or agent behind HTTP: `create_app(chain, settings)` is an ASGI application
(Starlette), which `chainkit serve` runs under uvicorn (`http_server`, which drains the app's
runs at shutdown). Starlette and uvicorn come with the `serve` extra and are imported only
when an app or server is made, never with chainkit.
"""

from chainkit.serving import errors as errors
from chainkit.serving._http_server import http_server
from chainkit.serving.app import create_app
from chainkit.serving.settings import ServerSettings

__all__ = ["ServerSettings", "create_app", "errors", "http_server"]
