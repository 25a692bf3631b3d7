"""verify_webhook against the Standard Webhooks specification's published test vector, and
each way a webhook fails."""

from __future__ import annotations

import unittest

import ledger_client as lc

from . import support as s


SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
MSG_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
TS = "1614265330"
BODY = b'{"test": 2432232314}'
SIG = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
NOW = float(TS)


def headers(**more: str) -> dict:  # type: ignore[type-arg]
    h = {"webhook-id": MSG_ID, "webhook-timestamp": TS, "webhook-signature": SIG}
    h.update({k.replace("_", "-"): v for k, v in more.items()})
    return h


class VerifyWebhook(unittest.TestCase):
    def test_the_specification_vector_verifies(self) -> None:
        lc.verify_webhook(SECRET, headers(), BODY, now=NOW)
        lc.verify_webhook(SECRET, headers(), BODY.decode(), now=NOW)
        lc.verify_webhook(SECRET, {"Webhook-Id": MSG_ID, "Webhook-Timestamp": TS, "Webhook-Signature": SIG}, BODY, now=NOW)
        lc.verify_webhook(SECRET, headers(webhook_signature="v1a,abc v1,Zm9v " + SIG), BODY, now=NOW)
        lc.verify_webhook(SECRET, headers(), BODY, now=NOW + 299)
        lc.verify_webhook(SECRET, headers(), BODY, now=NOW - 299)

    def test_a_changed_byte_fails(self) -> None:
        for i in range(len(BODY)):
            b = bytearray(BODY)
            b[i] ^= 1
            with self.assertRaisesRegex(lc.WebhookVerificationError, "no signature matches"):
                lc.verify_webhook(SECRET, headers(), bytes(b), now=NOW)
        for h in (headers(webhook_id=MSG_ID[:-1] + "K"), headers(webhook_timestamp=str(int(TS) + 1)),
                  headers(webhook_signature=SIG.replace("g0h", "g1h")), headers(webhook_signature=SIG.replace("v1,", "v2,"))):
            with self.assertRaisesRegex(lc.WebhookVerificationError, "no signature matches"):
                lc.verify_webhook(SECRET, h, BODY, now=NOW + (1 if h["webhook-timestamp"] != TS else 0))
        with self.assertRaises(lc.WebhookVerificationError):
            lc.verify_webhook(SECRET[:-1] + "x", headers(), BODY, now=NOW)

    def test_too_old_too_new_missing_or_malformed(self) -> None:
        cases = [
            (headers(), NOW + 301, 300, "too old"),
            (headers(), NOW - 301, 300, "future"),
            (headers(), NOW + 3601, 3600, "too old"),
            ({"webhook-id": MSG_ID, "webhook-timestamp": TS}, NOW, 300, "missing"),
            (headers(webhook_timestamp="1614265330.5"), NOW, 300, "whole seconds"),
        ]
        for h, now, tol, why in cases:
            with self.assertRaisesRegex(lc.WebhookVerificationError, why):
                lc.verify_webhook(SECRET, h, BODY, now=now, tolerance_seconds=tol)
        lc.verify_webhook(SECRET, headers(), BODY, now=NOW + 3599, tolerance_seconds=3600)
        with self.assertRaisesRegex(lc.WebhookVerificationError, "secret"):
            lc.verify_webhook("whsec_", headers(), BODY, now=NOW)
