"""DKIM keys per domain name (RSA 2048, and Ed25519 beside it when its owner asks), their DNS
records, and signing (RFC 6376 relaxed/relaxed, rsa-sha256; ed25519-sha256 of RFC 8463). Which key
signs when is mailcore.domains.rotation's; here a name's active keys sign. The signer is our own:
dkimpy's spent more than the RSA step again in Python parsing (0.52 ms a 2 KB message against
0.27 ms); this one canonicalizes with a few C-speed passes that run only when a cheap search finds
work for them, so OpenSSL's RSA step is most of the cost. For the same time its output is
byte-identical to dkimpy's `dkim.sign` (mailcore/tests/domains/test_dkim_signer.py), except that a
tag longer than a line (a long d=) stays whole, where dkimpy's fold breaks it and the signature
with it."""
import base64
import hashlib
import re
import time
from functools import lru_cache

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, padding, rsa, utils
from django.utils import timezone

from mailcore.domains.models import DkimKey

SELECTOR = "dkim"  # the first RSA key's (and every key made before rotation existed)
SIGNED_HEADERS = [b"from", b"to", b"cc", b"reply-to", b"subject", b"date", b"message-id", b"mime-version",
                  b"content-type",
                  # bulk mail: RFC 8058 requires the one-click pair to be signed; Gmail asks for Feedback-ID
                  b"list-unsubscribe", b"list-unsubscribe-post", b"feedback-id"]
_SIGNED = frozenset(SIGNED_HEADERS)
_PKCS1 = padding.PKCS1v15()
_PREHASHED = utils.Prehashed(hashes.SHA256())
_BLANK_LINE = re.compile(rb"\r?\n\r?\n")
_LINE_END = re.compile(rb"\r?\n")
_FIELD_NAME = re.compile(rb"[\x21-\x7e]+?:")  # printable ASCII up to the first colon (RFC 5322 2.2)
_WSP_BEFORE_CRLF = re.compile(rb"[\t ]+\r\n")
_WIDE_WSP = re.compile(rb"\t[\t ]*| [\t ]+")  # runs that are not a single space already


class DkimFormatError(ValueError):
    """The message cannot be signed: a header line that is no header field, or no From."""


def dkim_key_for(domain_name: str) -> DkimKey:
    """The name's RSA key that signs now, generated on first use and reused after."""
    return dkim_keys_for([domain_name])[domain_name.lower()]


def dkim_keys_for(domain_names) -> dict[str, DkimKey]:
    """The RSA keys signing now for many names in one query (by lower-case name), generating those
    still missing."""
    return {name: keys[0] for name, keys in dkim_signing_keys_for(domain_names).items()}


def dkim_signing_keys_for(domain_names) -> dict[str, list[DkimKey]]:
    """Every key that signs now for many names (by lower-case name) in one query: the RSA key first,
    then the Ed25519 one where DNS has it. A name's first RSA key is generated here."""
    names = {name.lower() for name in domain_names}
    keys: dict[str, list[DkimKey]] = {}
    for key in DkimKey.objects.filter(domain_name__in=names, state=DkimKey.State.ACTIVE).order_by("-algorithm"):
        keys.setdefault(key.domain_name, []).append(key)  # descending: "rsa" before "ed25519"
    for name in names - keys.keys():
        key, _ = DkimKey.objects.get_or_create(
            domain_name=name, algorithm=DkimKey.Algorithm.RSA, state=DkimKey.State.ACTIVE,
            defaults={"selector": SELECTOR, "private_key_pem": dkim_private_key_new(DkimKey.Algorithm.RSA),
                      "activated_at": timezone.now()})
        keys[name] = [key]
    return keys


def dkim_private_key_new(algorithm: str) -> str:
    """A new private key of the algorithm, as unencrypted PKCS#8 PEM."""
    if algorithm == DkimKey.Algorithm.ED25519:
        private = ed25519.Ed25519PrivateKey.generate()
    else:
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def dkim_public_record(key: DkimKey) -> str:
    """The TXT value for `<selector>._domainkey.<domain>`: an RSA key as SubjectPublicKeyInfo, an
    Ed25519 key as its 32 raw bytes (RFC 8463 4.2)."""
    public = _private_key(key.private_key_pem).public_key()
    if key.algorithm == DkimKey.Algorithm.ED25519:
        raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return f"v=DKIM1; k=ed25519; p={base64.b64encode(raw).decode()}"
    der = public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return f"v=DKIM1; k=rsa; p={base64.b64encode(der).decode()}"


@lru_cache(maxsize=256)
def _private_key(pem: str) -> rsa.RSAPrivateKey | ed25519.Ed25519PrivateKey:
    """Parsed once per process and key: loading a PEM costs ~40 ms (OpenSSL checks the key)."""
    return serialization.load_pem_private_key(pem.encode(), password=None)


def dkim_sign(raw: bytes, *, domain_name: str, key: DkimKey | None = None,
              keys: list[DkimKey] | None = None) -> bytes:
    """The message with a DKIM-Signature header prepended for each key (relaxed/relaxed): the name's
    keys that sign now (RSA, and Ed25519 beside it once DNS has it), or only `key`, or `keys` when
    the caller has them already (dispatch loads a batch's keys in one query). CRLF or LF line ends;
    raises DkimFormatError for a header line that is no header field or no From."""
    if keys is None:
        keys = [key] if key is not None else dkim_signing_keys_for([domain_name])[domain_name.lower()]
    head, body = _split_message(raw)
    fields = _signed_fields(head)
    body_hash = base64.b64encode(hashlib.sha256(_relaxed_body(body)).digest())
    domain = domain_name.lower().encode()
    headers = [_signature_field(fields, body_hash, domain=domain, key=each) for each in keys]
    return b"".join(headers) + raw  # the first key's signature on top


def _signature_field(fields: dict[bytes, bytes], body_hash: bytes, *, domain: bytes, key: DkimKey) -> bytes:
    """One DKIM-Signature field with its CRLF."""
    ed = key.algorithm == DkimKey.Algorithm.ED25519
    lines = _folded(_tags(fields, body_hash, domain=domain, selector=key.selector.encode(),
                          algorithm=b"ed25519-sha256" if ed else b"rsa-sha256"))
    hashed = hashlib.sha256(b"".join(fields.values()))
    # the signature's own field is hashed last, relaxed, with an empty b= and no CRLF (RFC 6376 3.7)
    hashed.update(b"dkim-signature:" + _WIDE_WSP.sub(b" ", b" ".join(lines) + b" b=").strip())
    private = _private_key(key.private_key_pem)
    if ed:  # PureEdDSA over the SHA-256 of the header hash input (RFC 8463 3)
        signature = private.sign(hashed.digest())
    else:
        signature = private.sign(hashed.digest(), _PKCS1, _PREHASHED)
    return b"DKIM-Signature: " + b"\r\n ".join(lines + _b_tag_lines(base64.b64encode(signature))) + b"\r\n"


def dkim_signable(raw: bytes) -> None:
    """Raise DkimFormatError when dkim_sign would (checked before accepting mail that is signed
    later), without signing."""
    _signed_fields(_split_message(raw)[0])


def _tags(fields: dict[bytes, bytes], body_hash: bytes, *, domain: bytes, selector: bytes,
          algorithm: bytes) -> bytes:
    """The signature's tags up to an empty b=, in dkimpy's order (so its output and ours compare)."""
    return b"; ".join([b"v=1", b"a=" + algorithm, b"c=relaxed/relaxed", b"d=" + domain, b"i=@" + domain,
                       b"q=dns/txt", b"s=" + selector, b"t=%d" % int(time.time()), b"h=" + b" : ".join(fields),
                       b"bh=" + body_hash]) + b";"


def _split_message(raw: bytes) -> tuple[bytes, bytes]:
    """Header block and body, split at the first empty line (CRLF or LF)."""
    if raw.startswith((b"\n", b"\r\n")):
        return b"", raw[raw.index(b"\n") + 1:]
    blank = _BLANK_LINE.search(raw)
    if blank is None:
        return raw, b""
    return raw[:blank.start()], raw[blank.end():]


def _signed_fields(head: bytes) -> dict[bytes, bytes]:
    """The last field of each name in SIGNED_HEADERS, in that order, relaxed (RFC 6376 3.4.2) as
    `name:value\\r\\n`: the last one, as a verifier picks fields from the bottom (RFC 6376 5.4.2)."""
    found: dict[bytes, list[bytes]] = {}
    current = None  # the lines of the field being read
    for line in _LINE_END.split(head):
        if not line:
            break  # the header block's own final line end
        if line[0] in b" \t":
            if current is None:
                raise DkimFormatError("the message starts with a folded header line")
            current.append(line)
            continue
        name = _FIELD_NAME.match(line)
        if name is None:
            if line.startswith(b"From "):
                continue  # an mbox separator line, skipped as dkimpy does
            raise DkimFormatError(f"not a header field: {line[:80]!r}")
        current = [line[name.end():]]
        if (lower := line[:name.end() - 1].lower()) in _SIGNED:
            found[lower] = current
    if b"from" not in found:  # DKIM must sign From (RFC 6376 5.4)
        raise DkimFormatError("the message has no From header field, which DKIM must sign")
    return {name: name + b":" + _WIDE_WSP.sub(b" ", b"".join(found[name])).strip() + b"\r\n"
            for name in SIGNED_HEADERS if name in found}


def _relaxed_body(body: bytes) -> bytes:
    """RFC 6376 3.4.4: CRLF line ends, no whitespace before them, other whitespace runs as one
    space, no empty lines at the end; an empty body hashes as nothing. Each regex pass runs only
    when a cheap search finds work for it: most bodies need none."""
    if body.count(b"\n") != body.count(b"\r\n"):
        body = _LINE_END.sub(b"\r\n", body)
    if b" \r\n" in body or b"\t\r\n" in body:
        body = _WSP_BEFORE_CRLF.sub(b"\r\n", body)
    if b"\t" in body or b"  " in body:
        body = _WIDE_WSP.sub(b" ", body)
    end = len(body)
    while body.endswith(b"\r\n", 0, end):
        end -= 2
    if end == len(body):
        body += b"\r\n"  # a last line without a line end gets one (as dkimpy: after its whitespace)
    else:
        body = body[:end + 2]
    return b"" if body == b"\r\n" else body


def _folded(tags: bytes) -> list[bytes]:
    """The tags broken at spaces into lines as dkimpy folds them (first line 57 characters after
    `DKIM-Signature: `, then 70): a tag longer than a line stays whole, so a long d= still verifies."""
    lines, line, room = [], b"", 72 - len(b"DKIM-Signature") - 1
    for word in tags.split(b" "):
        if line and len(line) + 1 + len(word) > room:
            lines.append(line)
            line, room = word, 70
        else:
            line = line + b" " + word if line else word
    return lines + [line]


def _b_tag_lines(signature: bytes) -> list[bytes]:
    """b= on lines of its own, 71 characters each (base64 may be folded anywhere, RFC 6376 3.5)."""
    value = b"b=" + signature
    return [value[i:i + 71] for i in range(0, len(value), 71)]
