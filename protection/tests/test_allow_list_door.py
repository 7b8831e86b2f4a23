"""The allow list is never an open door: an allowed envelope sender does not let in a message whose
From line names another domain, DMARC failing undoes an allow, and a blocked sender is refused
whichever of the two names it. _verdict on rspamd answers made here (no scanner needed)."""
import pytest

from mailcore.inbound.screening import Action, Arriving
from protection.models import SenderRule
from protection.rspamd import Scan, Symbol
from protection.screening import _verdict
from testkit.factories import make_mailbox

pytestmark = pytest.mark.django_db


def _raw(sender: str) -> bytes:
    return f"From: {sender}\r\nTo: ann@acme.test\r\nSubject: Hi\r\n\r\nHello\r\n".encode()


def _scan(score: float = 7.0, *symbols: str) -> Scan:
    return Scan(score=score, required_score=15, action="no action",
                symbols={name: Symbol(1.0) for name in symbols})


def _arriving(envelope_from: str) -> Arriving:
    return Arriving(client_ip="203.0.113.66", helo="mx.evil.test", envelope_from=envelope_from,
                    recipients=("ann@acme.test",))


@pytest.fixture
def mailbox(plans, alice, settings, tmp_path):
    settings.MAIL_STORE = "embedded"
    settings.DATA_DIR = tmp_path
    mailbox = make_mailbox(alice.account, "ann@acme.test", password="mailbox-password-1")
    SenderRule.objects.create(mailbox=mailbox, kind="allow", sender="news@shop.test")
    SenderRule.objects.create(mailbox=mailbox, kind="block", sender="spam.test")
    return mailbox


def test_an_allowed_envelope_sender_does_not_vouch_for_another_domains_from_line(mailbox):
    verdict = _verdict(mailbox, _scan(), _raw("PayPal <service@paypa1.test>"), _arriving("news@shop.test"),
                       "service@paypa1.test")

    assert verdict.action == Action.JUNK  # scored as anyone's mail, not let in by the allow rule


def test_an_allowed_envelope_sender_with_its_own_domains_from_line_is_let_in(mailbox):
    verdict = _verdict(mailbox, _scan(), _raw("Shop <offers@shop.test>"), _arriving("news@shop.test"), "offers@shop.test")

    assert verdict.action == Action.INBOX


def test_an_allowed_from_address_is_let_in_unless_dmarc_failed(mailbox):
    assert _verdict(mailbox, _scan(), _raw("News <news@shop.test>"), _arriving("bounce@mailer.test"),
                    "news@shop.test").action == Action.INBOX
    assert _verdict(mailbox, _scan(7.0, "DMARC_POLICY_SOFTFAIL"), _raw("News <news@shop.test>"),
                    _arriving("bounce@mailer.test"), "news@shop.test").action == Action.JUNK


def test_a_blocked_sender_is_refused_in_the_from_line_or_the_envelope(mailbox):
    assert _verdict(mailbox, _scan(), _raw("X <x@spam.test>"), _arriving("a@b.test"), "x@spam.test").action \
        == Action.REFUSE
    assert _verdict(mailbox, _scan(), _raw("News <news@shop.test>"), _arriving("x@mail.spam.test"),
                    "news@shop.test").action == Action.REFUSE
