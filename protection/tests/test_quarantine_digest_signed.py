"""The quarantine digest, kept straight in the Inbox, is still mail we originate: From the
platform's sending domain (with the partner's brand as its name), a Message-ID on it, and a DKIM
signature of that domain that dkimpy verifies over the loopback DNS."""
import pytest

from protection.tests.conftest import keep
from protection.tests.test_quarantine_digest import digests, run_digest
from testkit.signed_mail import signed_and_aligned
from webmail.models import WebmailBrand

pytestmark = pytest.mark.django_db


def test_the_digest_is_signed_and_aligned_with_the_platform_domain(partner, acme, settings, dns_zone):
    settings.SYSTEM_MAIL_DOMAIN = "mail.platform.test"
    WebmailBrand.objects.create(partner=partner, brand_name="Acme Hosting")
    keep(acme.mailbox, "Big sale")

    run_digest()

    [raw] = digests(acme.mailbox)
    message = signed_and_aligned(raw, dns_zone)
    assert message["From"].addresses[0].display_name == "Acme Hosting"
    assert message["From"].addresses[0].addr_spec == "postmaster@mail.platform.test"
    assert str(message["Message-ID"]).endswith("@mail.platform.test>")
    assert message["Subject"] == "1 message held in your quarantine"
