"""Verifying a webhook the service sent, by the Standard Webhooks specification
(https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md):
HMAC-SHA256 over ``{webhook-id}.{webhook-timestamp}.{body}`` with the endpoint's secret, sent
as ``v1,<base64>`` in ``webhook-signature``. The Go SDK's client.VerifyWebhook and the
TypeScript SDK's verifyWebhook are the same."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import time
from typing import Mapping, Optional, Union

#: How far a webhook's timestamp may be from now, either way, unless told otherwise.
DEFAULT_TOLERANCE_SECONDS = 5 * 60

_TIMESTAMP = re.compile(r"\d{1,12}")


class WebhookVerificationError(Exception):
    """The webhook is not one the holder of the secret sent, or it is too old or too new."""


def _header(headers: Mapping[str, str], name: str) -> Optional[str]:
    v = headers.get(name)
    if v is None:
        for k, x in headers.items():
            if k.lower() == name:
                return x
    return v


def verify_webhook(secret: str, headers: Mapping[str, str], body: Union[bytes, str], *,
                   tolerance_seconds: int = DEFAULT_TOLERANCE_SECONDS,
                   now: Optional[float] = None) -> None:
    """Checks that body (the request's raw bytes, exactly as received: parse it only
    afterwards) was signed with secret (``whsec_<base64>``, as the endpoint was given it)
    under the headers' webhook-id and webhook-timestamp, and that the timestamp is within
    tolerance_seconds of now (seconds since 1970; default the clock's). Any one of the
    space-separated signatures may match (two are sent while a secret rotates); signatures
    of versions other than v1 are ignored; the comparison takes constant time. Raises
    WebhookVerificationError, saying why, when the webhook fails."""
    raw = secret[len("whsec_"):] if secret.startswith("whsec_") else secret
    try:
        key = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if not key:
        raise WebhookVerificationError("ledger webhook: the secret is empty or not base64")
    msg_id = _header(headers, "webhook-id")
    ts = _header(headers, "webhook-timestamp")
    sigs = _header(headers, "webhook-signature")
    if not msg_id or not ts or not sigs:
        raise WebhookVerificationError("ledger webhook: missing webhook-id, webhook-timestamp or webhook-signature")
    if not _TIMESTAMP.fullmatch(ts):
        raise WebhookVerificationError("ledger webhook: webhook-timestamp is not whole seconds since 1970")
    at = int(ts)
    current = int(time.time() if now is None else now)
    if at < current - tolerance_seconds:
        raise WebhookVerificationError("ledger webhook: the timestamp is too old")
    if at > current + tolerance_seconds:
        raise WebhookVerificationError("ledger webhook: the timestamp is in the future")
    data = body.encode("utf-8") if isinstance(body, str) else bytes(body)
    want = hmac.new(key, msg_id.encode("utf-8") + b"." + ts.encode("ascii") + b"." + data, hashlib.sha256).digest()
    for sig in sigs.split(" "):
        version, sep, value = sig.partition(",")
        if not sep or version != "v1":
            continue
        try:
            got = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            continue
        if hmac.compare_digest(got, want):
            return
    raise WebhookVerificationError("ledger webhook: no signature matches")
