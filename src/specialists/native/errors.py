"""Classify provider failures (Infinity P9). Pure: status, code and message in, category out.

A config error (bad key, unknown model, wrong base_url) must never become a retry loop, and a
context overflow can never succeed by resending the same request, so neither is retried.
"""

from __future__ import annotations

import re

from specialists.native.model import ErrorCategory

_OVERFLOW_CODES = ("context_length_exceeded", "string_above_max_length", "request_too_large")
_OVERFLOW_PATTERNS = re.compile(
    r"prompt is too long|maximum context length|context (window|length)|too many tokens"
    r"|exceeds? the (model'?s? )?(context|maximum)|input is too long|reduce the length"
    r"|request too large|content too large",
    re.IGNORECASE,
)
_QUOTA_CODES = ("insufficient_quota", "billing_hard_limit_reached")
_THROTTLE_CODES = ("rate_limit_exceeded", "rate_limit_error", "overloaded_error", "overloaded")
_TRANSIENT_CODES = ("server_error", "api_error", "timeout", "internal_error")


def classify(status: int | None, code: str | None = None, message: str = "") -> ErrorCategory:
    """The category of one failed call.

    `status` is the HTTP status (None for in-stream error events and transport failures),
    `code` the provider's error code or type when it sent one.
    """
    code = (code or "").lower()
    if code in _OVERFLOW_CODES or status == 413:
        return "overflow"
    if code in _QUOTA_CODES:
        return "config"  # an empty account does not refill by waiting
    if status in (400, 422) and _OVERFLOW_PATTERNS.search(message):
        return "overflow"
    if status == 429 or code in _THROTTLE_CODES or status == 529:
        return "throttled"
    if status in (401, 403, 404, 402):
        return "config"
    if status is not None and (status >= 500 or status in (408, 409, 425)):
        return "transient"
    if status is not None and 400 <= status < 500:
        return "fatal"
    if code in _TRANSIENT_CODES:
        return "transient"
    if _OVERFLOW_PATTERNS.search(message):
        return "overflow"
    return "fatal"


def describe_status(provider: str, status: int | None, category: ErrorCategory) -> str:
    """A short reason phrase used in the one-line error."""
    if category == "config" and status in (401, 403):
        return f"{provider} rejected the API key"
    if category == "config" and status == 404:
        return f"{provider} does not know this model or endpoint"
    if category == "config":
        return f"{provider} refused the request (account or quota)"
    if category == "overflow":
        return "the conversation does not fit the model's context window"
    if category == "throttled":
        return f"{provider} is rate limiting or overloaded"
    if category == "transient":
        return f"{provider} failed temporarily"
    return f"{provider} rejected the request"


def short(text: str, limit: int = 300) -> str:
    """One line, capped: provider messages can be whole HTML pages."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
