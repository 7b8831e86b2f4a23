"""Bearer credentials (API keys, session tokens): random secrets with a lookup prefix.

Only a SHA-256 digest is stored. Verifying costs one indexed lookup by prefix and one
constant-time comparison, microseconds rather than a password hash's milliseconds; the
secret's 256 bits of entropy make a slow hash unnecessary.
"""
import hashlib
import hmac
import secrets
from dataclasses import dataclass

PREFIX_LENGTH = 12
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


@dataclass(frozen=True)
class Credential:
    raw: str  # shown to the holder once, never stored
    prefix: str  # stored, indexed, shown in lists
    digest: str  # stored


def digest_of(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def credential_new(kind: str) -> Credential:
    """A new credential such as `mk_3f9a0c2b7d1e_<43 url-safe chars>`."""
    lookup = "".join(secrets.choice(_ALPHABET) for _ in range(PREFIX_LENGTH))
    prefix = f"{kind}_{lookup}"
    raw = f"{prefix}_{secrets.token_urlsafe(32)}"
    return Credential(raw=raw, prefix=prefix, digest=digest_of(raw))


def prefix_of(raw: str, kind: str) -> str | None:
    """The lookup prefix of a raw credential of this kind, or None when it is malformed."""
    head_length = len(kind) + 1 + PREFIX_LENGTH
    head, separator, secret = raw[:head_length], raw[head_length : head_length + 1], raw[head_length + 1 :]
    if not head.startswith(f"{kind}_") or separator != "_" or len(secret) < 32:
        return None
    return head


def digest_matches(raw: str, stored_digest: str) -> bool:
    return hmac.compare_digest(digest_of(raw), stored_digest)
