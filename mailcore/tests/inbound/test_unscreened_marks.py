"""Mail delivered unscreened (LMTP from Postfix: another owner's submission, the app's relay) keeps
no header only our screener writes: a sender on this server cannot file its message in the
recipient's Junk (X-Mailwell-Verdict) nor show sender checks of ours it never had
(Authentication-Results with our authserv-id, in any case or comment form)."""
import pytest

import testkit.mail
from mailcore.inbox.services import inbox_authentication
from mailcore.store.factory import store_for
from testkit.mail import inbox
from testkit.smtp_sink import inbound_listener

pytestmark = pytest.mark.django_db(transaction=True)

TRACE = b"Return-Path: <bea@sender.test>\r\nDelivered-To: ann@example.test\r\n"
BASE = (b"From: Bea Sender <bea@sender.test>\r\nTo: ann@example.test\r\nSubject: Hi\r\n"
        b"Message-ID: <m1@sender.test>\r\nDate: Wed, 04 Mar 2026 05:00:00 +0000\r\n")
FORGED = (b"X-Mailwell-Verdict: junk\r\nx-spam-action:\r\n inbox\r\n"
          b"Authentication-Results: (a\\)b) MX.Mailwell.Test; dkim=pass header.d=paypal.test;\r\n"
          b"\tdmarc=pass header.from=paypal.test\r\n")


@pytest.fixture(autouse=True)
def embedded(plans, settings, tmp_path):
    settings.MAIL_STORE = "embedded"
    settings.SMTP_URL = ""
    settings.DATA_DIR = tmp_path
    settings.MAIL_HOST = "mx.mailwell.test"


def test_our_headers_from_an_unscreened_sender_are_removed_and_the_rest_kept(ann):
    others = b"Authentication-Results: other.example; dkim=fail\r\nX-Other: kept\r\n"
    with inbound_listener() as port:
        assert testkit.mail.lmtp_send(port, BASE + FORGED + others + b"\r\nBody\r\n", ["ann@example.test"],
                                      "bea@sender.test") == {}

    assert inbox(ann) == [TRACE + BASE + others + b"\r\nBody\r\n"]  # in the Inbox, not Junk
    (summary,) = store_for(ann).list("INBOX").messages
    assert inbox_authentication(mailbox=ann, folder="INBOX", uids=[summary.uid]) == {summary.uid: None}
