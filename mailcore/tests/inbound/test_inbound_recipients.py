"""What RCPT resolves an address on a hosted domain to: the mailbox, with everything delivery then
reads of it (account, plans, live forwarding rules) already there, in one query."""
import pytest
from django.utils import timezone

from mailcore.accounts.models import Plan
from mailcore.inbound.recipients import MAILBOX_DISABLED, NOT_HOSTED, UNKNOWN_USER, DeliveryPlan, resolve
from mailcore.mailboxes.models import ForwardingRule, Mailbox
from testkit.factories import make_mailbox

pytestmark = pytest.mark.django_db

MIB = 1024 * 1024


def test_a_mailbox_resolves_with_its_account_and_its_accounts_plan_in_one_query(alice, django_assert_num_queries):
    ann = make_mailbox(alice.account, "ann@example.test")

    with django_assert_num_queries(1):
        plan = resolve("<Ann@Example.test>")
        quota_mb, account_plan = plan.mailbox.quota_mb, plan.mailbox.account.plan.code

    assert plan == DeliveryPlan(mailbox=ann, forward_to=(), keep_copy=True)
    assert (plan.mailbox.address, plan.mailbox.account, account_plan) == ("ann@example.test", alice.account, "premium")
    assert (quota_mb, plan.mailbox.plan) == (Plan.objects.get(code="premium").storage_mb, None)


def test_a_mailbox_on_a_plan_of_its_own_gets_that_plans_quota_in_one_query(alice, django_assert_num_queries):
    small = Plan.objects.create(code="small", name="Small", rank=50, sends_per_day=1, sends_per_hour=1,
                                storage_mb=7, attachment_max_mb=1)
    make_mailbox(alice.account, "ann@example.test", plan=small)
    Mailbox.objects.filter(address="ann@example.test").update(extra_storage_mb=3)

    with django_assert_num_queries(1):
        mailbox = resolve("ann@example.test").mailbox
        assert (mailbox.plan.code, mailbox.quota_mb, mailbox.is_active) == ("small", 10, True)


def test_live_forwarding_rules_are_in_the_plan_and_others_are_not(alice):
    ann = make_mailbox(alice.account, "ann@example.test")
    ForwardingRule.objects.create(mailbox=ann, forward_to="Kept@Elsewhere.test", keep_copy=True,
                                  confirmed_at=timezone.now())
    ForwardingRule.objects.create(mailbox=ann, forward_to="unconfirmed@elsewhere.test", keep_copy=False)

    assert resolve("ann@example.test") == DeliveryPlan(mailbox=ann, forward_to=("kept@elsewhere.test",),
                                                       keep_copy=True)


def test_a_disabled_mailbox_an_unknown_user_and_another_domain_are_refused(alice):
    make_mailbox(alice.account, "ann@example.test")
    Mailbox.objects.filter(address="ann@example.test").update(is_active=False)

    assert [resolve(address) for address in ("ann@example.test", "nobody@example.test", "ann@elsewhere.test")] == [
        MAILBOX_DISABLED, UNKNOWN_USER, NOT_HOSTED]


def test_a_mailbox_stored_with_capitals_is_still_found(alice):
    ann = make_mailbox(alice.account, "ann@example.test")
    Mailbox.objects.filter(pk=ann.pk).update(address="Ann@example.test")

    plan = resolve("ann@example.test")

    assert (plan.mailbox.pk, plan.keep_copy) == (ann.pk, True)
