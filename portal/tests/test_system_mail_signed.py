"""Every system mail leaves signed and aligned (issue 34, point 2): sign-up verification, password
reset, partner approval, forwarding confirmation and held-send notice each reach the relay (a real
SMTP server on loopback) From the platform's sending domain, with a Message-ID on it and a DKIM
signature of that domain that dkimpy verifies against the key on the loopback DNS; subjects name
the product, never the request's host."""
import re
from email.utils import parseaddr

import pytest
from django.core import mail

from billing.services.partners import partner_approve
from mailcore.mailboxes.forwarding import forwarding_rule_create
from mailcore.partners.models import HostingPartner
from mailcore.partners.services import hosting_partner_enable
from mailcore.sending.dispatch import outbound_dispatch_due
from testkit.clients import new_key
from testkit.factories import PASSWORD, UserFactory, make_mailbox
from testkit.rspamd import GTUBE
from testkit.signed_mail import signed_and_aligned

pytestmark = pytest.mark.django_db

SYSTEM = "mail.platform.test"


@pytest.fixture
def system_mail(settings, relay, dns_zone):
    """The production backend in place of the tests' locmem one; the relay is the sink."""
    settings.SYSTEM_MAIL_DOMAIN = SYSTEM
    settings.DEFAULT_FROM_EMAIL = f"Mailwell <no-reply@{SYSTEM}>"
    settings.MAILERS = {"default": {"BACKEND": "mailcore.outbound.systemmail.SignedRelayBackend"}}
    return relay


def only_message(sink, to: str):
    (received,) = [message for message in sink.messages if message.rcpt_tos == [to]]
    return received


def assert_system_mail(received, zone, *, to: str):
    assert received.mail_from == f"no-reply@{SYSTEM}"
    message = signed_and_aligned(received.content, zone)
    assert parseaddr(str(message["From"])) == ("Mailwell", f"no-reply@{SYSTEM}")
    assert str(message["Message-ID"]).endswith(f"@{SYSTEM}>")
    assert message["To"] == to
    return message


def test_the_sign_up_verification_mail_is_signed_by_the_platform_domain_and_names_the_product(
        client, system_mail, dns_zone):
    client.post("/accounts/signup/", {"email": "dana@example.test", "password1": PASSWORD, "password2": PASSWORD},
                HTTP_HOST="127.0.0.1:8211")

    message = assert_system_mail(only_message(system_mail, "dana@example.test"), dns_zone, to="dana@example.test")
    assert message["Subject"] == "[Mailwell] Please Confirm Your Email Address"
    assert "127.0.0.1" not in message["Subject"]
    assert "/accounts/confirm-email/" in message.get_body(("plain",)).get_content()
    assert mail.outbox == []  # it left through the signing backend, not the tests' in-memory one


def test_the_password_reset_mail_is_signed_by_the_platform_domain(client, alice, system_mail, dns_zone):
    client.post("/accounts/password/reset/", {"email": alice.email}, HTTP_HOST="127.0.0.1:8211")

    message = assert_system_mail(only_message(system_mail, alice.email), dns_zone, to=alice.email)
    assert message["Subject"] == "[Mailwell] Password Reset Email"
    assert re.search(r"/accounts/password/reset/key/\S+", message.get_body(("plain",)).get_content())


def test_the_partner_approval_mail_is_signed_by_the_platform_domain(system_mail, dns_zone,
                                                                    django_capture_on_commit_callbacks):
    user = UserFactory(email="pat@resell.test", account__plan_code="free")
    partner = hosting_partner_enable(account=user.account, status=HostingPartner.Status.PENDING)

    with django_capture_on_commit_callbacks(execute=True):
        partner_approve(partner=partner)

    message = assert_system_mail(only_message(system_mail, "pat@resell.test"), dns_zone, to="pat@resell.test")
    assert message["Subject"] == "Your Mailwell partner account is approved"


def test_the_forwarding_confirmation_is_signed_by_the_platform_domain(alice, system_mail, dns_zone):
    mailbox = make_mailbox(alice.account, "ann@example.test")

    forwarding_rule_create(mailbox=mailbox, email="ann@example.test", forward_to="far@elsewhere.test")

    message = assert_system_mail(only_message(system_mail, "far@elsewhere.test"), dns_zone, to="far@elsewhere.test")
    assert message["Subject"] == "Confirm forwarding from ann@example.test"


def test_the_held_send_notice_is_signed_by_the_platform_domain(rspamd_settings, api, alice, system_mail, dns_zone,
                                                               django_capture_on_commit_callbacks):
    make_mailbox(alice.account, "ann@example.test")
    api.credentials(HTTP_X_API_KEY=new_key(alice, scopes=["send"]))
    api.post("/mail/send", {"from_email": "ann@example.test", "to": ["bob@remote.test"], "subject": "Totally legit",
                            "body_text": f"Buy now {GTUBE}"}, format="json")

    with django_capture_on_commit_callbacks(execute=True):
        outbound_dispatch_due()

    assert [message.rcpt_tos for message in system_mail.messages] == [[alice.email]]  # the send itself was held
    message = assert_system_mail(system_mail.messages[0], dns_zone, to=alice.email)
    assert message["Subject"] == "A message from ann@example.test was held: it looks like spam"
