"""Mailbox passwords, hashed in a scheme Dovecot verifies itself ({ARGON2ID} + PHC string)."""
import functools
import hashlib
import hmac
import secrets
import threading
import time
from collections import OrderedDict

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from django.conf import settings
from django.utils.crypto import constant_time_compare, salted_hmac

_SCHEME = "{ARGON2ID}"
_STAMP_SALT = "mailwell.mailbox-session-credential"
# argon2id at OWASP's recommended minimum (19 MiB, 2 passes): Dovecot verifies it on every IMAP
# login a phone makes, so the library's 64 MiB default would cost ~0.5 s of server CPU each.
_hasher = PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1)


def mailbox_password_hash(password: str) -> str:
    return _SCHEME + _hasher.hash(password)


@functools.cache
def _stand_in_hash() -> str:
    """A hash of the same algorithm and cost, checked in place of a mailbox that does not exist."""
    return _hasher.hash(secrets.token_urlsafe(16))


def mailbox_password_verify(password: str, stored: str | None) -> bool:
    """Check a password against a stored hash. Without one (no such mailbox, a deleted one) the same
    argon2 work is done against a stand-in, so the answer's timing does not say which addresses exist."""
    has_hash = stored is not None and stored.startswith(_SCHEME)
    try:
        ok = _hasher.verify(stored[len(_SCHEME):] if has_hash else _stand_in_hash(), password)
    except (VerificationError, InvalidHashError):
        return False
    return ok and has_hash


def mailbox_credential_stamp(stored: str) -> str:
    """What a session opened with this password hash remembers of it: any change of the password
    (or its removal when the mailbox is deleted) ends the session."""
    return salted_hmac(_STAMP_SALT, stored, algorithm="sha256").hexdigest()


def mailbox_credential_stamp_matches(stamp: str, stored: str) -> bool:
    """The stamp was taken from this hash (under the current secret key or one of its fallbacks)."""
    candidates = [salted_hmac(_STAMP_SALT, stored, secret=secret, algorithm="sha256").hexdigest()
                  for secret in [settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS]]
    return any(constant_time_compare(stamp, candidate) for candidate in candidates)


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


def mailbox_password_verify_repeated(password: str, stored: str | None) -> bool:
    """mailbox_password_verify for credentials a client repeats on every request (DAV)."""
    if stored is None or not stored.startswith(_SCHEME):
        return mailbox_password_verify(password, stored)
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
