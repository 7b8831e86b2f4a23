"""The two hand-written lookups (the sending mailbox of a send, the mailbox a RCPT resolves to)
build the same instances as the ORM's select_related would: every concrete field of the mailbox,
its account and its plan, with the same Python types, on both databases."""
import pytest

from mailcore.accounts.models import Plan
from mailcore.inbound.recipients import resolve
from mailcore.mailboxes.models import Mailbox
from mailcore.sending.inputs import SendRequest
from mailcore.sending.services import mail_send
from testkit.factories import make_mailbox

pytestmark = pytest.mark.django_db


def fields(instance) -> dict:
    return {field.attname: (value := getattr(instance, field.attname), type(value))
            for field in type(instance)._meta.concrete_fields}


@pytest.fixture(params=["account's plan", "own plan"])
def mailbox(request, alice):
    plan = None
    if request.param == "own plan":
        plan = Plan.objects.create(code="small", name="Small", rank=50, sends_per_day=9, sends_per_hour=3,
                                   storage_mb=7, attachment_max_mb=1)
    make_mailbox(alice.account, "ann@example.test", plan=plan, display_name="Ann É")
    Mailbox.objects.filter(address="ann@example.test").update(extra_storage_mb=3, imap_port=None)
    return Mailbox.objects.select_related("plan", "account__plan").get(address="ann@example.test")


def assert_same(built, expected):
    assert fields(built) == fields(expected)
    assert fields(built.effective_plan) == fields(expected.effective_plan)
    assert fields(built.account) == fields(expected.account)
    assert built.plan_id == expected.plan_id and (built.plan is None) == (expected.plan is None)


def test_a_sends_mailbox_is_the_instance_the_orm_would_build(mailbox, alice):
    request = SendRequest.from_data({"from_email": " Ann@Example.test ", "to": ["bob@remote.test"],
                                     "subject": "Hi", "body_text": "Hello", "sandbox": True})
    account = type(alice.account).objects.get(pk=alice.account.pk)  # its plan not loaded: the query brings it

    message = mail_send(account=account, user=None, request=request)

    assert_same(message.mailbox, mailbox)
    assert message.mailbox.account is account


def test_a_recipients_mailbox_is_the_instance_the_orm_would_build(mailbox):
    assert_same(resolve("ann@example.test").mailbox, mailbox)
