"""DKIM keys (RSA 2048) per domain name, their DNS record, and signing with dkimpy."""
import base64

import dkim
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from mailcore.domains.models import DkimKey

SELECTOR = "dkim"
SIGNED_HEADERS = [b"from", b"to", b"cc", b"reply-to", b"subject", b"date", b"message-id", b"mime-version",
                  b"content-type",
                  # bulk mail: RFC 8058 requires the one-click pair to be signed; Gmail asks for Feedback-ID
                  b"list-unsubscribe", b"list-unsubscribe-post", b"feedback-id"]


def dkim_key_for(domain_name: str) -> DkimKey:
    """The name's key, generated on first use and reused after."""
    key = DkimKey.objects.filter(domain_name=domain_name.lower()).first()
    if key is not None:
        return key
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    key, _ = DkimKey.objects.get_or_create(
        domain_name=domain_name.lower(), defaults={"selector": SELECTOR, "private_key_pem": pem}
    )
    return key


def dkim_public_record(key: DkimKey) -> str:
    """The TXT value for `<selector>._domainkey.<domain>`."""
    private = serialization.load_pem_private_key(key.private_key_pem.encode(), password=None)
    der = private.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return f"v=DKIM1; k=rsa; p={base64.b64encode(der).decode()}"


def dkim_sign(raw: bytes, *, domain_name: str) -> bytes:
    """The message with a DKIM-Signature header prepended (relaxed/relaxed, rsa-sha256)."""
    key = dkim_key_for(domain_name)
    signature = dkim.sign(
        raw,
        key.selector.encode(),
        domain_name.lower().encode(),
        key.private_key_pem.encode(),
        include_headers=[name for name in SIGNED_HEADERS if _has_header(raw, name)],
        canonicalize=(b"relaxed", b"relaxed"),
    )
    return signature + raw


def _has_header(raw: bytes, name: bytes) -> bool:
    head = raw.split(b"\r\n\r\n", 1)[0].split(b"\n\n", 1)[0].lower()
    return head.startswith(name + b":") or b"\n" + name + b":" in head
