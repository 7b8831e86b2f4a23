"""emit(): one way to raise an event, durable with the change that caused it."""
import pytest
from django.db import transaction

from mailcore.events.catalog import EVENTS
from mailcore.events.models import Event
from mailcore.events.services import emit

pytestmark = pytest.mark.django_db


def test_it_records_the_event_with_its_data(alice):
    event = emit(account=alice.account, name="mailbox.created", data={"email": "a@b.test"})
    stored = Event.objects.get(pk=event.pk)
    assert (stored.name, stored.data, stored.sandbox) == ("mailbox.created", {"email": "a@b.test"}, False)


def test_sandbox_events_carry_sandbox_true_in_their_data(alice):
    event = emit(account=alice.account, name="email.sent", data={"message_id": "x"}, sandbox=True)
    assert event.data == {"message_id": "x", "sandbox": True}
    assert event.sandbox is True


def test_an_event_disappears_with_the_change_that_rolled_back(alice):
    with pytest.raises(RuntimeError):
        with transaction.atomic():
            emit(account=alice.account, name="mailbox.created", data={})
            raise RuntimeError("the change failed")
    assert Event.objects.count() == 0


def test_an_unknown_event_name_is_refused(alice):
    with pytest.raises(ValueError, match="unknown event"):
        emit(account=alice.account, name="email.teleported", data={})
    assert Event.objects.count() == 0


def test_the_catalog_holds_the_27_events_of_the_spec_payment_failed_the_quarantine_s_two_held_sends_and_domain_trust():
    assert len(EVENTS) == 33
    assert {"email.received", "partner_mailbox.payment_abandoned", "domain.verification_failed",
            "payment.failed", "email.quarantined", "email.released", "domain.dkim_rotated",
            "domain.dmarc_alert"} <= set(EVENTS)
