"""Secrets kept in the database (connected mailboxes' passwords), encrypted with Fernet."""
import base64
import hashlib
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings


@lru_cache(maxsize=4)
def _fernet(key: str, secret_key: str) -> Fernet:
    if key:
        return Fernet(key.encode())
    # development only (production refuses to start without FIELD_ENCRYPTION_KEY)
    return Fernet(base64.urlsafe_b64encode(hashlib.sha256(f"field-encryption:{secret_key}".encode()).digest()))


def encrypt(value: str) -> str:
    return _fernet(settings.FIELD_ENCRYPTION_KEY, settings.SECRET_KEY).encrypt(value.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _fernet(settings.FIELD_ENCRYPTION_KEY, settings.SECRET_KEY).decrypt(token.encode()).decode()
    except InvalidToken:
        raise ValueError("the stored secret cannot be decrypted with FIELD_ENCRYPTION_KEY") from None
