"""Our own DKIM signer (mailcore.domains.dkim): its signatures verify with dkimpy for every shape of
message we send (CRLF and LF, folded and repeated headers, odd whitespace, empty and padded bodies,
bulk mail), and for the same time they are byte-identical to dkimpy's own `dkim.sign`, so its relaxed
canonicalization, body hash, tag list and folding are dkimpy's."""
import base64
import re
from datetime import UTC, datetime
from types import SimpleNamespace

import dkim
import pytest
import time_machine
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

from mailcore.domains.dkim import DkimFormatError, dkim_key_for, dkim_public_record, dkim_sign
from mailcore.domains.models import DkimKey
from mailcore.sending.compose import compose

NOON = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def key():
    """A key of our own, unsaved: signing with a key in hand needs no database."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    return DkimKey(domain_name="example.test", selector="dkim", private_key_pem=pem)


@pytest.fixture(scope="module")
def ed_key():
    """An Ed25519 key of our own (RFC 8463), unsaved, with its raw 32-byte seed for dkimpy."""
    private = ed25519.Ed25519PrivateKey.generate()
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    seed = private.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                                 serialization.NoEncryption())
    return DkimKey(domain_name="example.test", selector="dkimed", algorithm="ed25519", private_key_pem=pem), seed


def verifies(message: bytes, key: DkimKey) -> bool:
    """dkimpy's verdict, with DNS answering the key's own record."""
    record = dkim_public_record(key).encode()
    return dkim.verify(message, dnsfunc=lambda name, timeout=5: record)


def signature_of(signed: bytes) -> bytes:
    """The DKIM-Signature header our signer put in front, with its folds and final CRLF."""
    return re.match(rb"DKIM-Signature: .*?\r\n(?! )", signed, re.S).group(0)


def signed_names(signed: bytes) -> list[str]:
    """The h= list of a signed message."""
    unfolded = signature_of(signed).replace(b"\r\n", b"")
    return re.search(rb"h=([^;]*);", unfolded).group(1).decode().replace(" ", "").split(":")


def composed() -> bytes:
    """A bulk message as dispatch builds it: mailcore.sending.compose's own output (text and HTML,
    CRLF, the bulk headers first)."""
    sender = SimpleNamespace(display_name="Alice Example", address="alice@example.test", signature_html="")
    figures = "Here are this month's figures, as you asked. " * 6
    payload = {"to": ["bob@example.org", "Carol <carol@example.net>"], "cc": [], "reply_to": "",
               "subject": "Your report for November – résumé inside", "attachments": [],
               "body_text": f"Hello Bob,\n\n{figures}\n\nAlice\n",
               "body_html": f"<html>\n  <body>\n    <p>Hello Bob,</p>\n    <p>{figures}</p>\n  </body>\n</html>\n",
               "headers": [("List-Unsubscribe",
                            "<https://example.test/u/abcdef0123456789>, <mailto:unsub+abc@example.test>"),
                           ("List-Unsubscribe-Post", "List-Unsubscribe=One-Click"),
                           ("Feedback-ID", "c17:news:mailwell")]}
    return compose(mailbox=sender, payload=payload, message_id="abc123",
                   rfc_message_id="<20261125120000.abc123@example.test>", track_opens=False,
                   date=datetime(2026, 11, 25, 12, 0, tzinfo=UTC)).raw


HEAD = b"From: Alice <alice@example.test>\r\nTo: bob@example.org\r\nSubject: Hello\r\n"
MESSAGES = {
    "plain ascii": (HEAD + b"Date: Wed, 25 Nov 2026 12:00:00 +0000\r\nMessage-ID: <a@example.test>\r\n\r\n"
                    b"Hello Bob,\r\n\r\nsee you tomorrow.\r\n",
                    ["from", "to", "subject", "date", "message-id"]),
    "utf-8 body and subject": (("From: Zoë <zoe@example.test>\r\nTo: bob@example.org\r\nSubject: Grüße aus Köln\r\n"
                                "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n"
                                "Content-Transfer-Encoding: 8bit\r\n\r\nGrüße, Zoë — ça va? 日本語\r\n").encode(),
                               ["from", "to", "subject", "mime-version", "content-type"]),
    "folded long headers": (b"From: Alice <alice@example.test>\r\nTo: bob@example.org,\r\n carol@example.net,\r\n"
                            b"\tdave@example.net\r\nSubject: A subject that goes on for rather a long while and\r\n"
                            b" so was folded\r\n  twice\r\n\r\nBody\r\n", ["from", "to", "subject"]),
    "whitespace in headers and body": (b"From:\tAlice  <alice@example.test> \t\r\nTo:   bob@example.org\t\r\n"
                                       b"Subject: \t spaced \t out \t\r\n\r\n"
                                       b"line  with\t\truns \t\r\n\ttabbed line\r\ntrailing tab\t\r\n",
                                       ["from", "to", "subject"]),
    "empty body": (HEAD + b"\r\n", ["from", "to", "subject"]),
    "no body at all": (HEAD, ["from", "to", "subject"]),
    "body of blank lines": (HEAD + b"\r\n\r\n \r\n\t\r\n", ["from", "to", "subject"]),
    "trailing blank lines": (HEAD + b"\r\nHello\r\n\r\n\r\n\r\n", ["from", "to", "subject"]),
    "no final line end": (HEAD + b"\r\nHello  \t", ["from", "to", "subject"]),
    "lone LF line ends": (HEAD.replace(b"\r\n", b"\n") + b"Subject-Extra: x\n\tfolded\n\nHello\n\nBob \n\n\n",
                          ["from", "to", "subject"]),
    "mixed line ends": (HEAD + b"\nHello\nthere\r\nBob\r\r\n", ["from", "to", "subject"]),
    "repeated headers": (b"Received: from a by b; Wed, 25 Nov 2026 12:00:00 +0000\r\n"
                         b"Received: from c by d; Wed, 25 Nov 2026 11:59:00 +0000\r\n"
                         b"To: first@example.org\r\n" + HEAD + b"\r\nHi\r\n", ["from", "to", "subject"]),
    "every signed header": (HEAD + b"Cc: carol@example.net\r\nReply-To: desk@example.test\r\n"
                            b"Date: Wed, 25 Nov 2026 12:00:00 +0000\r\nMessage-ID: <b@example.test>\r\n"
                            b"MIME-Version: 1.0\r\nContent-Type: text/plain\r\nX-Mailer: Mailwell\r\n"
                            b"Bcc: hidden@example.org\r\n\r\nHi\r\n",
                            ["from", "to", "cc", "reply-to", "subject", "date", "message-id", "mime-version",
                             "content-type"]),
    "bulk message": (composed(), ["from", "to", "subject", "date", "message-id", "mime-version", "content-type",
                                  "list-unsubscribe", "list-unsubscribe-post", "feedback-id"]),
}


@pytest.mark.parametrize("raw, names", MESSAGES.values(), ids=MESSAGES.keys())
def test_a_signed_message_verifies_with_dkimpy_and_signs_the_headers_it_has(key, raw, names):
    signed = dkim_sign(raw, domain_name="example.test", key=key)

    assert signed.endswith(raw)
    assert signed_names(signed) == names
    assert verifies(signed, key)


@pytest.mark.parametrize("raw, names", MESSAGES.values(), ids=MESSAGES.keys())
def test_the_signature_is_byte_identical_to_dkimpys_own_for_the_same_time(key, raw, names):
    with time_machine.travel(NOON, tick=False):
        ours = dkim_sign(raw, domain_name="example.test", key=key)
        reference = dkim.sign(raw, b"dkim", b"example.test", key.private_key_pem.encode(),
                              canonicalize=(b"relaxed", b"relaxed"), include_headers=[n.encode() for n in names])

    assert ours == reference + raw


def test_the_signature_header_lists_its_tags_in_dkimpys_order_and_folds_under_78_columns(key):
    with time_machine.travel(NOON, tick=False):
        signed = dkim_sign(MESSAGES["bulk message"][0], domain_name="Example.TEST", key=key)

    header = signature_of(signed)
    assert max(len(line) for line in header.split(b"\r\n")) <= 78
    tags = [tag.split(b"=", 1)[0] for tag in header.replace(b"\r\n ", b" ")[len(b"DKIM-Signature: "):].split(b"; ")]
    assert tags == [b"v", b"a", b"c", b"d", b"i", b"q", b"s", b"t", b"h", b"bh", b"b"]
    assert b" d=example.test;" in header and b" i=@example.test;" in header and b" s=dkim;" in header
    assert f" t={int(NOON.timestamp())};".encode() in header
    assert b"a=rsa-sha256; c=relaxed/relaxed;" in header
    assert len(base64.b64decode(re.search(rb"b=([^;]*)\r\n$", header.replace(b"\r\n ", b"")).group(1))) == 256


def test_a_domain_name_longer_than_a_line_still_verifies(key):
    domain = "mail." + "a-very-long-label-" * 3 + "for-a-customer.example.test"
    raw = f"From: news@{domain}\r\nTo: bob@example.org\r\nSubject: Hi\r\n\r\nHi\r\n".encode()

    signed = dkim_sign(raw, domain_name=domain, key=key)

    assert f" d={domain};".encode() in signature_of(signed)  # whole: dkimpy's fold would break it in two
    assert verifies(signed, key)


@pytest.mark.parametrize("change", [
    (b"see you tomorrow.", b"see you today."),
    (b"Subject: Hello", b"Subject: Hell0"),
    (b"To: bob@example.org", b"To: mallory@example.org"),
])
def test_a_change_to_the_body_or_a_signed_header_fails_verification(key, change):
    signed = dkim_sign(MESSAGES["plain ascii"][0], domain_name="example.test", key=key)

    assert not verifies(signed.replace(*change), key)


def test_a_change_to_an_unsigned_header_or_to_whitespace_still_verifies(key):
    signed = dkim_sign(MESSAGES["plain ascii"][0], domain_name="example.test", key=key)
    relaxed = signed.replace(b"Subject: Hello", b"subject:   Hello \t").replace(b"see you", b"see  you")

    assert verifies(b"X-Spam-Score: 0\r\n" + relaxed, key)


@pytest.mark.parametrize("raw, problem", [
    (b"To: bob@example.org\r\nSubject: Hi\r\n\r\nHi\r\n", "no From"),
    (HEAD + b"this is no header line\r\n\r\nHi\r\n", "not a header field"),
    (b" folded first\r\n" + HEAD + b"\r\nHi\r\n", "starts with a folded"),
])
def test_a_message_dkim_cannot_sign_is_refused_with_the_reason(key, raw, problem):
    with pytest.raises(DkimFormatError, match=problem):
        dkim_sign(raw, domain_name="example.test", key=key)


@pytest.mark.django_db
def test_without_a_key_in_hand_it_signs_with_the_names_stored_key():
    raw = MESSAGES["plain ascii"][0]

    signed = dkim_sign(raw, domain_name="Example.TEST")

    stored = dkim_key_for("example.test")
    assert DkimKey.objects.count() == 1
    assert verifies(signed, stored)


@pytest.mark.parametrize("raw, names", MESSAGES.values(), ids=MESSAGES.keys())
def test_an_ed25519_signature_is_byte_identical_to_dkimpys_own_and_verifies(ed_key, raw, names):
    key, seed = ed_key
    with time_machine.travel(NOON, tick=False):
        ours = dkim_sign(raw, domain_name="example.test", key=key)
        reference = dkim.sign(raw, b"dkimed", b"example.test", base64.b64encode(seed),
                              canonicalize=(b"relaxed", b"relaxed"), include_headers=[n.encode() for n in names],
                              signature_algorithm=b"ed25519-sha256")

    assert ours == reference + raw
    assert b"a=ed25519-sha256;" in signature_of(ours)
    assert verifies(ours, key)
    assert dkim_public_record(key).startswith("v=DKIM1; k=ed25519; p=")


def test_with_both_keys_it_signs_rsa_on_top_and_ed25519_beside_it_and_each_verifies(key, ed_key):
    raw = MESSAGES["plain ascii"][0]
    records = {b"dkim._domainkey.example.test.": dkim_public_record(key).encode(),
               b"dkimed._domainkey.example.test.": dkim_public_record(ed_key[0]).encode()}

    signed = dkim_sign(raw, domain_name="example.test", keys=[key, ed_key[0]])

    assert re.findall(rb"^DKIM-Signature: v=1; a=([\w-]+);", signed, re.M) == [b"rsa-sha256", b"ed25519-sha256"]
    for idx in (0, 1):
        assert dkim.DKIM(signed).verify(idx=idx, dnsfunc=lambda name, timeout=5: records.get(name))
