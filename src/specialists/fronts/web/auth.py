"""The per-run token: every request must carry it, compared in constant time.

An ASGI middleware in front of every route (pages, API, streams alike), so no route can be
added without it. It also sets the headers every response needs: nothing cached, no
referrer (the URL holds the token), no sniffing, and a default-deny content policy.
"""

from __future__ import annotations

import hmac
from typing import Any
from urllib.parse import parse_qs

FORBIDDEN = b"forbidden: missing or wrong token (open the URL `specialists web` printed)\n"
BASE_HEADERS = [
    (b"cache-control", b"no-store"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
]
DEFAULT_CSP = b"default-src 'none'; frame-ancestors 'none'"

Scope = dict[str, Any]


def token_of(query_string: bytes) -> str:
    values = parse_qs(query_string.decode("latin-1"), max_num_fields=20).get("token", [])
    return values[0] if len(values) == 1 else ""


class TokenGate:
    def __init__(self, app: Any, token: str) -> None:
        if len(token) < 16:
            raise ValueError("bug: the web token must be at least 16 characters")
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # websockets: none are served
            return
        try:
            given = token_of(scope.get("query_string", b"")).encode()
        except ValueError:  # more fields than allowed, or undecodable
            given = b""
        if not hmac.compare_digest(given, self._token):
            await _forbidden(send)
            return

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                headers.extend(h for h in BASE_HEADERS if h[0] not in names)
                if b"content-security-policy" not in names:
                    headers.append((b"content-security-policy", DEFAULT_CSP))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _forbidden(send: Any) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 403,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(FORBIDDEN)).encode()),
                (b"content-security-policy", DEFAULT_CSP),
                *BASE_HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": FORBIDDEN})
