"""The system mail backend (mailcore.outbound.systemmail) as receivers and `make run` see it: mail
From a verified hosted domain (partner-branded) is signed with that domain's key; a From we cannot
sign for leaves From the platform's address, the reply still reaching the one it named; without a
relay the signed message is kept in the local outbox and printed on the console with its links;
production refuses to start without SYSTEM_MAIL_DOMAIN."""
import io
import smtplib
from email.utils import parseaddr

import pytest
from django.core.mail import EmailMessage, send_mail

from mailcore.domains.services import domain_create
from mailcore.outbound.systemmail import SignedRelayBackend
from testkit.django_process import PRODUCTION, django_probe
from testkit.factories import make_domain
from testkit.signed_mail import signed_and_aligned

pytestmark = pytest.mark.django_db

SYSTEM = "mail.platform.test"


@pytest.fixture
def backend(settings):
    settings.SYSTEM_MAIL_DOMAIN = SYSTEM
    settings.DEFAULT_FROM_EMAIL = f"Mailwell <no-reply@{SYSTEM}>"
    settings.MAILERS = {"default": {"BACKEND": "mailcore.outbound.systemmail.SignedRelayBackend"}}


def test_mail_from_a_verified_hosted_domain_is_signed_with_that_domains_key(alice, backend, relay, dns_zone):
    make_domain(alice.account, "brand.test")

    EmailMessage("Your mailbox is ready", "Hello.", "Brand Hosting <hello@brand.test>", ["kim@elsewhere.test"]).send()

    [received] = relay.messages
    message = signed_and_aligned(received.content, dns_zone)
    assert received.mail_from == "hello@brand.test"
    assert parseaddr(str(message["From"])) == ("Brand Hosting", "hello@brand.test")
    assert str(message["Message-ID"]).endswith("@brand.test>")


def test_a_from_we_cannot_sign_for_leaves_from_the_platform_with_the_reply_to_kept(alice, backend, relay, dns_zone):
    domain_create(account=alice.account, name="pending.test")  # claimed, not verified: not ours to sign for

    send_mail("Hello", "Body.", "Pat <pat@pending.test>", ["kim@elsewhere.test"])

    [received] = relay.messages
    message = signed_and_aligned(received.content, dns_zone)
    assert received.mail_from == f"no-reply@{SYSTEM}"
    assert parseaddr(str(message["From"])) == ("Pat", f"no-reply@{SYSTEM}")
    assert parseaddr(str(message["Reply-To"])) == ("Pat", "pat@pending.test")


def test_without_a_relay_the_signed_mail_is_kept_in_the_outbox_and_printed(settings, tmp_path, dns_zone):
    settings.SYSTEM_MAIL_DOMAIN, settings.SMTP_URL, settings.DATA_DIR = SYSTEM, "", tmp_path
    settings.DEFAULT_FROM_EMAIL = f"Mailwell <no-reply@{SYSTEM}>"
    console = io.StringIO()

    sent = SignedRelayBackend(echo=True, stream=console).send_messages(
        [EmailMessage("[Mailwell] Please Confirm", "Open http://127.0.0.1:8000/accounts/confirm-email/abc/\n",
                      None, ["dana@example.test"])])

    assert sent == 1
    [kept] = (tmp_path / "outbox").glob("*.eml")
    head, _, raw = kept.read_bytes().partition(b"X-Outbox-Envelope-To: <dana@example.test>\r\n")
    assert head == f"X-Outbox-Envelope-From: <no-reply@{SYSTEM}>\r\n".encode()
    message = signed_and_aligned(raw, dns_zone)
    assert message["Subject"] == "[Mailwell] Please Confirm"
    printed = console.getvalue()
    assert printed.startswith("DKIM-Signature: ") and "http://127.0.0.1:8000/accounts/confirm-email/abc/" in printed


def test_a_relay_that_refuses_is_an_smtp_error_for_the_caller(backend, relay):
    relay.refuse["gone@elsewhere.test"] = "550 5.1.1 No such user"

    with pytest.raises(smtplib.SMTPException) as refused:
        send_mail("Hello", "Body.", None, ["gone@elsewhere.test"])

    assert "550 5.1.1 No such user" in str(refused.value) and relay.messages == []


def test_production_refuses_to_start_without_the_system_mail_domain(tmp_path):
    environment = {name: value for name, value in PRODUCTION.items() if name != "SYSTEM_MAIL_DOMAIN"}

    result = django_probe("print('started')", {**environment, "DATA_DIR": str(tmp_path)})

    assert result.returncode != 0 and "needs SYSTEM_MAIL_DOMAIN" in result.stderr


def test_production_derives_the_sender_from_the_system_mail_domain(tmp_path):
    probe = "from django.conf import settings; print(settings.DEFAULT_FROM_EMAIL)"

    result = django_probe(probe, {**PRODUCTION, "SYSTEM_MAIL_DOMAIN": "Example.COM.", "DATA_DIR": str(tmp_path)})

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Mailwell <no-reply@example.com>"
