"""quarantine_keep: a held message is a row for its mailbox and an email.quarantined event, together."""
import pytest

from mailcore.events.models import Event
from protection.models import Quarantined
from protection.quarantine import quarantine_keep
from testkit.factories import make_message

pytestmark = pytest.mark.django_db

GTUBE = "XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X"


def keep(mailbox, subject="You won", **options):
    raw = make_message(subject, f"Claim now. {GTUBE}", sender="Prize <prize@spam.test>", to=mailbox.address)
    arguments = {"envelope_from": "bounce@spam.test", "score": 15.2, "reasons": ["It contains a known spam test pattern."],
                 "symbols": {"GTUBE": {"score": 0.0, "description": "GTUBE", "options": []}}} | options
    return quarantine_keep(mailbox=mailbox, raw=raw, **arguments), raw


def test_it_keeps_the_message_with_what_the_lists_show(ann):
    item, raw = keep(ann)

    item.refresh_from_db()
    assert (item.mailbox, bytes(item.raw), item.size, item.subject, item.from_header, item.envelope_from) == (
        ann, raw, len(raw), "You won", "Prize <prize@spam.test>", "bounce@spam.test")
    assert (item.score, item.reasons, item.virus, item.is_waiting) == (
        15.2, ["It contains a known spam test pattern."], "", True)
    assert item.public_id.startswith("q_")


def test_it_says_so_in_an_email_quarantined_event_of_the_mailbox_account(ann):
    item, raw = keep(ann, virus="Eicar-Signature")

    [event] = Event.objects.filter(name="email.quarantined")
    assert event.account == ann.account
    assert event.data["id"] == item.public_id
    assert (event.data["mailbox"], event.data["subject"], event.data["score"], event.data["virus"],
            event.data["size_bytes"]) == ("ann@example.test", "You won", 15.2, "Eicar-Signature", len(raw))
    assert event.data["reasons"] == ["It contains a known spam test pattern."]
    assert {"quarantined_at", "expires_at", "message_id", "from", "envelope_from"} <= set(event.data)


def test_rspamd_symbol_objects_are_kept_as_plain_json(ann):
    class Symbol:
        score, description, options = 2.5, "Sender is not allowed by SPF", ("1.2.3.4",)

    item, _ = keep(ann, symbols={"R_SPF_FAIL": Symbol(), "BAYES_SPAM": 5.1})

    item.refresh_from_db()
    assert item.symbols == {"R_SPF_FAIL": {"score": 2.5, "description": "Sender is not allowed by SPF",
                                           "options": ["1.2.3.4"]},
                            "BAYES_SPAM": {"score": 5.1}}


def test_a_mailbox_over_its_quarantine_size_loses_its_oldest_waiting_messages(ann, settings):
    settings.QUARANTINE_MAX_MB = 0  # every earlier message must make room for the newest
    first, _ = keep(ann, subject="first")
    second, _ = keep(ann, subject="second")

    assert list(Quarantined.objects.values_list("subject", flat=True)) == ["second"]
