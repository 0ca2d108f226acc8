"""Signing a browser in: a browser cannot send a bearer header when it loads a page, so a
request for a page without the token is answered with a small sign-in form (no app data), and
`POST /login` with the right token sets a session cookie that stands for the header.

The cookie holds an expiry and an HMAC of it keyed with the token (the token itself never
leaves the form's body: not in the cookie, a URL or a redirect), so any worker of the server
checks it and it stops working when it expires or the token changes. It is HttpOnly (no script
reads it) and SameSite=Strict (no other site's page sends it), Secure over https. A request
that changes state with the cookie must also carry the page's own header, which no form of
another site can send and no script of another origin can without CORS letting it: a
cross-site request never acts with the user's cookie."""

from __future__ import annotations

import hashlib
import hmac
import html
import re
import time
from collections.abc import Iterable
from importlib import resources
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.types import Receive, Scope, Send

COOKIE = "chainkit_session"
PAGE_HEADER = b"x-chainkit-page"
"""The header the chat page sends with each request that changes state."""
SESSION_SECONDS = 12 * 3600
LOGIN_PATH = "/login"
_FORM_LIMIT = 8 * 1024
"""The longest sign-in body read: a token and the page to go back to."""
_SAFE_METHODS = (b"GET", b"HEAD", b"OPTIONS")
_NEXT = re.compile(r"/[A-Za-z0-9._~/-]{0,200}")
"""A page to go back to after signing in: a path of this server only (no scheme, no host)."""
_PLACEHOLDER = re.compile(r"__(ACTION|NEXT|NOTE)__")
_FORM_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)


def session_value(token: bytes, now: float) -> str:
    """A cookie value good for SESSION_SECONDS from `now`."""
    expires = int(now) + SESSION_SECONDS
    return f"{expires}.{_signature(token, expires)}"


def session_allows(token: bytes, headers: Iterable[tuple[bytes, bytes]], now: float) -> bool:
    """Whether the request's cookies hold a session of `token` not yet expired."""
    value = _cookie(headers)
    if value is None:
        return False
    expires, _, signature = value.partition(".")
    if not expires.isdigit() or len(expires) > 12 or int(expires) <= now:
        return False
    return hmac.compare_digest(signature.encode(), _signature(token, int(expires)).encode())


def _signature(token: bytes, expires: int) -> str:
    message = f"chainkit.serving session until {expires}".encode()
    return hmac.new(token, message, hashlib.sha256).hexdigest()


def _cookie(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    for name, value in headers:
        if name == b"cookie":
            for part in value.decode("latin-1").split(";"):
                key, _, found = part.strip().partition("=")
                if key == COOKIE:
                    return found
    return None


ANOTHER_SITE = "the request comes from another site"


def cross_site_refusal(scope: Scope) -> str | None:
    """Why a request authenticated by the cookie may not change state, or None: it must
    carry the page's header and come from a page of this origin."""
    if scope["method"].encode() in _SAFE_METHODS:
        return None
    if PAGE_HEADER not in dict(scope["headers"]):
        return "a request with the session cookie that changes state needs X-Chainkit-Page: 1"
    return ANOTHER_SITE if from_another_site(scope) else None


def from_another_site(scope: Scope) -> bool:
    """Whether a request that changes state comes from a page of another site, by the
    browser's word."""
    unsafe = scope["method"].encode() not in _SAFE_METHODS
    return unsafe and not _same_origin(dict(scope["headers"]))


def _same_origin(headers: dict[bytes, bytes]) -> bool:
    """Whether the browser says the request comes from a page of this origin (browsers that
    do not say are held by SameSite and the page's header alone). The browser's word, not
    the Host header's, which a proxy in front may rewrite."""
    return headers.get(b"sec-fetch-site", b"same-origin") in (b"same-origin", b"none")


def is_sign_in(scope: Scope) -> bool:
    return bool(scope["path"] == LOGIN_PATH and scope["method"] == "POST")


def wants_page(scope: Scope) -> bool:
    """Whether the request is a browser loading a page (it accepts HTML)."""
    if scope["method"] not in ("GET", "HEAD"):
        return False
    return any(
        name == b"accept" and b"text/html" in value.lower() for name, value in scope["headers"]
    )


async def send_form(scope: Scope, send: Send, note: str = "") -> None:
    """The sign-in form (401), which comes back to the page asked for."""
    path = scope["path"] if _NEXT.fullmatch(scope["path"]) else "/"
    await _send_form(scope, send, path, note)


async def sign_in(scope: Scope, receive: Receive, send: Send, token: bytes) -> None:
    """`POST /login`: with the right token, the session cookie and a redirect (303) to the
    page asked for; else the form again."""
    headers = dict(scope["headers"])
    if not _same_origin(headers):
        await _send_plain(send, 403, "signing in from another site is refused")
        return
    body = await _body(receive)
    if body is None:
        await _send_plain(send, 413, "the sign-in form is over 8 KiB")
        return
    try:
        fields = parse_qs(body.decode(), max_num_fields=4, strict_parsing=False)
    except (UnicodeDecodeError, ValueError):
        fields = {}
    given = (fields.get("token") or [""])[0]
    back = (fields.get("next") or ["/"])[0]
    back = back if _NEXT.fullmatch(back) and "//" not in back else "/"
    if not hmac.compare_digest(given.encode(), token):
        await _send_form(scope, send, back, "That token is not the server's.")
        return
    secure = "; Secure" if scope.get("scheme") == "https" else ""
    cookie = (
        f"{COOKIE}={session_value(token, time.time())}; Path=/; Max-Age={SESSION_SECONDS}; "
        f"HttpOnly; SameSite=Strict{secure}"
    )
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [
                (b"location", (scope.get("root_path", "") + back).encode()),
                (b"set-cookie", cookie.encode()),
                (b"cache-control", b"no-store"),
                (b"content-length", b"0"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": b""})


PATHS = {
    "/logout": {
        "post": {
            "summary": "Signs a browser out: its session cookie is cleared",
            "responses": {
                "200": {
                    "description": "the cookie is cleared",
                    "content": {"application/json": {}},
                },
                "401": {"description": "no valid bearer token or session cookie"},
            },
        }
    }
}
"""The sign-out route as the app's OpenAPI description shows it (`POST /login` is the auth
middleware's, not a route: docs/serving.md describes it)."""


async def sign_out(request: Request) -> Response:
    """`POST /logout`: the browser forgets its session cookie (which another copy of it
    would still carry until it expires: changing the token ends every session)."""
    from starlette.responses import JSONResponse

    return JSONResponse(
        {"status": "signed_out"},
        headers={
            "Set-Cookie": f"{COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict",
            "Cache-Control": "no-store",
        },
    )


async def _body(receive: Receive) -> bytes | None:
    """The request's body, or None once it passes the limit (read no further)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b""
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > _FORM_LIMIT:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _send_form(scope: Scope, send: Send, back: str, note: str) -> None:
    form = (resources.files(__package__) / "page" / "signin.html").read_text(encoding="utf-8")
    values = {
        "ACTION": html.escape(scope.get("root_path", "") + LOGIN_PATH),
        "NEXT": html.escape(back),
        "NOTE": html.escape(note),
    }
    # One pass: a value that holds a placeholder's name is never replaced in turn.
    body = _PLACEHOLDER.sub(lambda match: values[match[1]], form).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"text/html; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b"Bearer"),
                (b"content-security-policy", _FORM_POLICY.encode()),
                (b"x-content-type-options", b"nosniff"),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _send_plain(send: Send, status: int, text: str) -> None:
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
