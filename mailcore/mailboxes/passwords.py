"""Mailbox passwords, hashed in a scheme Dovecot verifies itself ({ARGON2ID} + PHC string)."""
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

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
