"""The listener's own vacation replies (the embedded store) are signed by the domain they come
From: mail to an alias on another of the account's verified domains is answered From that alias,
and signed with that domain's key, which dkimpy verifies over the loopback DNS."""
import smtplib

import pytest

from mailcore.accounts.models import Account, Plan
from mailcore.domains.services import domain_create, domain_mark_verified
from mailcore.mailboxes.aliases import alias_create
from mailcore.mailboxes.services import mailbox_create
from mailcore.rules.filters import VacationInput, vacation_set
from testkit.signed_mail import signature_tags, signed_and_aligned
from testkit.smtp_sink import inbound_listener, smtp_sink

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_vacation_reply_from_an_alias_on_another_domain_is_signed_by_that_domain(settings, plans, tmp_path,
                                                                                  dns_zone):
    settings.MAIL_STORE, settings.DATA_DIR = "embedded", tmp_path
    account = Account.objects.create(name="Owner", plan=Plan.objects.get(code="premium"))
    home = domain_mark_verified(domain=domain_create(account=account, name="home.test"))
    domain_mark_verified(domain=domain_create(account=account, name="shop.test"))
    mailbox = mailbox_create(domain=home, local_part="ann", password="ann password 1")
    alias_create(mailbox=mailbox, alias_address="sales@shop.test")
    vacation_set(mailbox=mailbox, data=VacationInput(enabled=True, subject="Away", body="Back on Monday.", days=7))
    raw = (b"From: Bea <bea@sender.test>\r\nTo: sales@shop.test\r\nSubject: Price?\r\n"
           b"Message-ID: <q1@sender.test>\r\nDate: Wed, 04 Mar 2026 05:06:07 +0000\r\n\r\nHow much?\r\n")

    with smtp_sink() as (port, relay):
        settings.SMTP_URL = f"smtp://127.0.0.1:{port}"
        with inbound_listener() as listener, smtplib.LMTP("127.0.0.1", listener) as client:
            assert client.sendmail("bea@sender.test", ["sales@shop.test"], raw) == {}

    [reply] = [message for message in relay.messages if message.rcpt_tos == ["bea@sender.test"]]
    message = signed_and_aligned(reply.content, dns_zone)
    assert message["From"] == "sales@shop.test" and signature_tags(reply.content)["d"] == "shop.test"
    assert str(message["Message-ID"]).endswith("@shop.test>")
