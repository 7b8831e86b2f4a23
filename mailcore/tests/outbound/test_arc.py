"""ARC sets on forwarded mail (mailcore.outbound.arc): sealed with the forwarding domain's DKIM key
over our screener's results, verified as a next hop would (dkimpy's arc_verify, the key served by
the loopback DNS)."""
import dkim
import pytest

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
