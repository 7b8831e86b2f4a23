"""Mailbox passwords, hashed in a scheme Dovecot verifies itself ({ARGON2ID} + PHC string)."""
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

_SCHEME = "{ARGON2ID}"
_hasher = PasswordHasher()  # argon2id with the library's recommended cost


def mailbox_password_hash(password: str) -> str:
    return _SCHEME + _hasher.hash(password)


def mailbox_password_verify(password: str, stored: str) -> bool:
    if not stored.startswith(_SCHEME):
        return False
    try:
        return _hasher.verify(stored[len(_SCHEME):], password)
    except (VerificationError, InvalidHashError):
        return False
