"""Pieces the SDK adapters share: SDK exception -> ModelError, retry-after, argument JSON.

The official openai and anthropic SDKs share one exception layout (APIStatusError with
status_code/body/response, APIConnectionError, APITimeoutError); each adapter calls
`translate_sdk_error` from the single except clause around its stream.
"""

from __future__ import annotations

import email.utils
import json
import logging
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from specialists.base.reader import Invalid, load_json
from specialists.base.usage_limit import describe, from_headers
from specialists.native.messages import ToolCall
from specialists.native.model import (
    ModelError,
    ModelRequest,
    StreamEvent,
    classify,
    describe_status,
    short,
)

log = logging.getLogger(__name__)
_tls: dict[tuple[str | None, str | None], Any] = {}  # (SSL_CERT_FILE, SSL_CERT_DIR) -> context


def tls_context() -> Any:
    """The TLS context the SDKs' HTTP clients verify with, one per process (and per CA
    setting): building one reads the whole CA bundle, about 100 ms a client. A forked
    supervisor inherits the fork server's (supervise/forks.py)."""
    import os

    key = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    if key not in _tls:
        import httpx2  # the SDKs' own HTTP library

        _tls[key] = httpx2.create_ssl_context()  # as the SDK's default client does
    return _tls[key]


def http_client(sdk: Any) -> Any:
    """The SDK's default HTTP client (its limits, redirects; the SDK client's own timeout
    applies to each request), verifying with `tls_context`."""
    return sdk.DefaultHttpxClient(verify=tls_context())


def translate_sdk_error(
    exc: BaseException, *, label: str, base_url: str | None, timeout_s: float, sdk: Any
) -> ModelError:
    """Any exception out of an SDK call or its stream, as one ModelError."""
    if isinstance(exc, ModelError):
        return exc
    where = base_url or "the provider's default endpoint"
    if isinstance(exc, sdk.APITimeoutError):
        return ModelError(
            f"{label}: no response from {where} within {timeout_s:g} s", category="transient"
        )
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        detail = short(str(cause or exc), 200)
        return ModelError(f"{label}: connection to {where} failed: {detail}", category="transient")
    if isinstance(exc, sdk.APIStatusError):
        status = int(exc.status_code)
        code, message = _code_and_message(getattr(exc, "body", None), str(exc))
        category = classify(status, code, message)
        reason = describe_status(label.split("/", 1)[0], status, category)
        response = getattr(exc, "response", None)
        wait = retry_after(response)
        resets = limit_reset(response) if status == 429 else None
        if resets is not None:  # said so that the job pauses until then (base/usage_limit.py)
            wait = max(wait or 0.0, resets / 1000 - time.time())
            return ModelError(
                f"{describe(label, resets)}: {short(message)}",
                category=category,
                status=status,
                retry_after=wait,
            )
        return ModelError(
            f"{label}: {reason} (HTTP {status}): {short(message)}",
            category=category,
            status=status,
            retry_after=wait,
        )
    if isinstance(exc, sdk.APIError):
        # An error event inside an otherwise good stream (no HTTP status).
        return stream_error(label, *_code_and_message(getattr(exc, "body", None), str(exc)))
    if _is_transport_error(exc):
        return ModelError(
            f"{label}: connection to {where} broke mid-stream: {type(exc).__name__}: "
            f"{short(str(exc), 200)}",
            category="transient",
        )
    return ModelError(
        f"{label}: the provider sent a malformed response ({type(exc).__name__}: "
        f"{short(str(exc), 200)})",
        category="fatal",
    )


def _is_transport_error(exc: BaseException) -> bool:
    module = type(exc).__module__.split(".", 1)[0]
    return module in ("httpx", "httpx2", "httpcore", "httpcore2", "h11") or isinstance(
        exc, ConnectionError | TimeoutError
    )


def _code_and_message(body: Any, fallback: str) -> tuple[str | None, str]:
    """(code or type, message) from an OpenAI- or Anthropic-shaped error body."""
    if isinstance(body, Mapping):
        inner = body.get("error") if isinstance(body.get("error"), Mapping) else body
        assert isinstance(inner, Mapping)
        code = inner.get("code") or inner.get("type")
        message = inner.get("message") or fallback
        return (str(code) if code else None), str(message)
    return None, fallback


def limit_reset(response: Any) -> int | None:
    """When a 429's limit resets (epoch ms), from its rate-limit headers; None when it has
    none (a bare `retry-after` is retried in place, as any throttle)."""
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    named = {str(k).lower(): str(v) for k, v in headers.items()}
    if not any("ratelimit" in k and "reset" in k for k in named):
        return None
    return from_headers(named, int(time.time() * 1000))


def retry_after(response: Any) -> float | None:
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass  # fall through to retry-after
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass  # not seconds: maybe an HTTP date
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, parsed.timestamp() - time.time())


def parse_arguments(call_id: str, name: str, raw: str | None) -> ToolCall:
    """A tool call from its JSON argument text; bad JSON becomes `arguments_error`."""
    if not raw or not raw.strip():
        return ToolCall(call_id, name, {})
    try:  # the model's text: nesting bounded, never a RecursionError in a later walk
        value = load_json(raw, "JSON", max_nodes=None)
    except Invalid as exc:
        return ToolCall(call_id, name, {}, arguments_error=f"not valid JSON ({exc.problem})")
    if not isinstance(value, dict):
        return ToolCall(call_id, name, {}, arguments_error="arguments must be a JSON object")
    return ToolCall(call_id, name, value)


def dump_arguments(arguments: Mapping[str, Any]) -> str:
    return json.dumps(dict(arguments), ensure_ascii=False, separators=(",", ":"))


def stream_error(label: str, code: Any, message: Any) -> ModelError:
    """An error the provider sent inside a stream, classified like any other."""
    category = classify(None, str(code) if code else None, str(message))
    return ModelError(f"{label}: stream error: {short(str(message))}", category=category)


class StreamParser(Protocol):
    def feed(self, event: dict[str, Any]) -> Iterator[StreamEvent]: ...

    def finish(self) -> Iterator[StreamEvent]: ...


class SdkStreamClient:
    """What the three SDK adapters share: open one streaming call, feed each event (as a
    dict) to the provider's parser, translate SDK errors in one place, and keep the open
    streams so `cancel` (called from another thread on abort) can close them."""

    def __init__(self, sdk: Any, label: str, base_url: str | None, timeout_s: float) -> None:
        self._sdk = sdk
        self.label = label
        self.base_url = base_url
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._active: set[Any] = set()

    def _open(self, request: ModelRequest) -> Any:
        raise NotImplementedError

    def _parser(self) -> StreamParser:
        raise NotImplementedError

    def stream(self, request: ModelRequest) -> Iterator[StreamEvent]:
        parser = self._parser()
        try:
            stream = self._open(request)
            with self._lock:
                self._active.add(stream)
            try:
                for event in stream:
                    yield from parser.feed(event.to_dict())
            finally:
                with self._lock:
                    self._active.discard(stream)
                stream.close()
            yield from parser.finish()
        except Exception as exc:  # the one translation point for every SDK
            raise translate_sdk_error(
                exc,
                label=self.label,
                base_url=self.base_url,
                timeout_s=self.timeout_s,
                sdk=self._sdk,
            ) from exc

    def cancel(self) -> None:
        """Close in-flight streams (best effort: a dying stream may fail to close)."""
        with self._lock:
            streams = list(self._active)
        for stream in streams:
            try:
                stream.close()
            except Exception as exc:  # noqa: BLE001 - reported, and the abort goes on
                log.debug("closing aborted stream failed: %s", exc)
