"""`t=<unix>,v1=<hex>` signatures over `<t>.<raw body>` (Stripe's scheme, reused by the local provider)."""
import hashlib
import hmac
import time

from billing.providers.base import SignatureInvalid

TOLERANCE_SECONDS = 300


def sign(secret: str, body: bytes, *, timestamp: int | None = None) -> str:
    timestamp = int(time.time()) if timestamp is None else timestamp
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def verify(secret: str, body: bytes, header: str | None, *, now: float | None = None) -> None:
    if not header:
        raise SignatureInvalid("missing signature header")
    parts = {}
    for item in header.split(","):
        key, _, value = item.strip().partition("=")
        parts.setdefault(key, []).append(value)
    try:
        timestamp = int(parts["t"][0])
    except (KeyError, ValueError):
        raise SignatureInvalid("malformed signature header") from None
    if abs((time.time() if now is None else now) - timestamp) > TOLERANCE_SECONDS:
        raise SignatureInvalid("signature timestamp outside the tolerance")
    expected = sign(secret, body, timestamp=timestamp).split("v1=")[1]
    if not any(hmac.compare_digest(expected, candidate) for candidate in parts.get("v1", [])):
        raise SignatureInvalid("signature does not match")
