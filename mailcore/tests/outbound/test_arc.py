"""ARC sets on forwarded mail (mailcore.outbound.arc): sealed with the forwarding domain's DKIM key
over our screener's results, verified as a next hop would (dkimpy's arc_verify, the key served by
the loopback DNS)."""
import base64

import dkim
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from mailcore.dnslookup import dkim_dnsfunc
from mailcore.domains.dkim import dkim_key_for, dkim_public_record
from mailcore.outbound.arc import arc_seal

pytestmark = pytest.mark.django_db

BODY = (b"From: Bea <bea@sender.test>\r\nTo: ann@example.test\r\nSubject: The minutes\r\n"
        b"Message-ID: <m1@sender.test>\r\n\r\nAttached, the minutes.\r\n")


@pytest.fixture
def published(dns_zone, settings):
    settings.MAIL_HOST = "mx.mailwell.test"
    key = dkim_key_for("example.test")
    dns_zone.set(f"{key.selector}._domainkey.example.test", "TXT", dkim_public_record(key))
    return key


def results(authserv_id: str, arc: str = "none") -> bytes:
    return (f"Authentication-Results: {authserv_id}; spf=pass smtp.mailfrom=bea@sender.test; "
            f"dkim=pass header.d=sender.test; dmarc=pass header.from=sender.test; arc={arc}\r\n").encode()


def test_a_screened_message_is_sealed_by_the_forwarding_domain_and_the_chain_verifies(published):
    sealed = arc_seal(results("mx.mailwell.test") + BODY, domain_name="example.test")

    cv, [found], reason = dkim.arc_verify(sealed, dnsfunc=dkim_dnsfunc)
    assert (cv, reason) == (dkim.CV_Pass, "success")
    assert (found["instance"], found["cv"], found["as-domain"], found["ams-domain"]) == (
        1, b"none", b"example.test", b"example.test")
    assert found["aar-value"] == (b"i=1; mx.mailwell.test; spf=pass smtp.mailfrom=bea@sender.test; "
                                  b"dkim=pass header.d=sender.test; dmarc=pass header.from=sender.test; arc=none\r\n")
    assert sealed.endswith(BODY)


def test_a_seal_does_not_verify_once_the_sealed_message_is_changed(published):
    sealed = arc_seal(results("mx.mailwell.test") + BODY, domain_name="example.test")

    cv, _, _ = dkim.arc_verify(sealed.replace(b"The minutes", b"Wire the money"), dnsfunc=dkim_dnsfunc)
    assert cv == dkim.CV_Fail


def test_a_message_without_results_of_ours_is_forwarded_unsealed(published):
    unscreened = BODY
    someone_elses = results("mx.elsewhere.test") + BODY

    assert arc_seal(unscreened, domain_name="example.test") == unscreened
    assert arc_seal(someone_elses, domain_name="example.test") == someone_elses


def test_a_list_messages_chain_is_extended_and_still_verifies_when_its_dkim_is_broken(published, dns_zone):
    """A mailing list added its footer (the author's DKIM fails) and sealed its results (i=1); our
    screener found that chain valid (arc=pass): our set is i=2 with cv=pass and the whole chain verifies."""
    list_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = list_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())
    public = list_key.public_key().public_bytes(serialization.Encoding.DER,
                                                serialization.PublicFormat.SubjectPublicKeyInfo)
    dns_zone.set("list._domainkey.lists.test", "TXT", f"v=DKIM1; k=rsa; p={base64.b64encode(public).decode()}")
    at_the_list = (b"Authentication-Results: mx.lists.test; spf=pass smtp.mailfrom=bea@sender.test; "
                   b"dkim=pass header.d=sender.test; arc=none\r\n" + BODY + b"-- \r\nThe minutes list\r\n")
    from_the_list = b"".join(dkim.arc_sign(at_the_list, b"list", b"lists.test", pem, b"mx.lists.test")) + at_the_list
    screened = (b"Authentication-Results: mx.mailwell.test; spf=pass smtp.mailfrom=minutes-bounces@lists.test; "
                b"dkim=fail header.d=sender.test; dmarc=fail header.from=sender.test; arc=pass\r\n" + from_the_list)

    sealed = arc_seal(screened, domain_name="example.test")

    cv, sets, reason = dkim.arc_verify(sealed, dnsfunc=dkim_dnsfunc)
    assert (cv, reason) == (dkim.CV_Pass, "success")
    assert [(found["instance"], found["cv"], found["as-domain"]) for found in sets] == [
        (2, b"pass", b"example.test"), (1, b"none", b"lists.test")]
    assert sets[0]["aar-value"].startswith(b"i=2; mx.mailwell.test; spf=pass")


def test_when_our_screener_could_not_judge_an_earlier_chain_no_set_is_added(published):
    unsure = results("mx.mailwell.test", arc="temperror") + BODY
    assert arc_seal(unsure, domain_name="example.test") == unsure
