"""Mailbox passwords, hashed in a scheme Dovecot verifies itself ({ARGON2ID} + PHC string)."""
import hashlib
import hmac
import threading
import time
from collections import OrderedDict

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from django.conf import settings

_SCHEME = "{ARGON2ID}"
# argon2id at OWASP's recommended minimum (19 MiB, 2 passes): Dovecot verifies it on every IMAP
# login a phone makes, so the library's 64 MiB default would cost ~0.5 s of server CPU each.
_hasher = PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1)


def mailbox_password_hash(password: str) -> str:
    return _SCHEME + _hasher.hash(password)


def mailbox_password_verify(password: str, stored: str) -> bool:
    if not stored.startswith(_SCHEME):
        return False
    try:
        return _hasher.verify(stored[len(_SCHEME):], password)
    except (VerificationError, InvalidHashError):
        return False


# Sync clients (CardDAV/CalDAV) send Basic credentials with every request, dozens per sync: each
# argon2 check costs ~50 ms of CPU. A password that verified recently is remembered, per process,
# as a keyed digest of (stored hash, password): never the password itself, and a changed password
# (a new stored hash) can never match an old entry. Failures are never remembered.
VERIFIED_SECONDS = 300
VERIFIED_MAX = 10_000
_verified: OrderedDict[bytes, float] = OrderedDict()
_verified_lock = threading.Lock()


def _verified_key(password: str, stored: str) -> bytes:
    key = hashlib.sha256(b"mailwell.mailbox-password-verified" + settings.SECRET_KEY.encode()).digest()
    return hmac.new(key, stored.encode() + b"\0" + password.encode("utf-8", "surrogatepass"), "sha256").digest()


def mailbox_password_verify_repeated(password: str, stored: str) -> bool:
    """mailbox_password_verify for credentials a client repeats on every request (DAV)."""
    key, now = _verified_key(password, stored), time.monotonic()
    with _verified_lock:
        until = _verified.get(key)
        if until is not None and until > now:
            _verified.move_to_end(key)
            return True
    if not mailbox_password_verify(password, stored):
        return False
    with _verified_lock:
        _verified[key] = now + VERIFIED_SECONDS
        _verified.move_to_end(key)
        while len(_verified) > VERIFIED_MAX:
            _verified.popitem(last=False)
    return True
