"""The one place billing state changes: a verified, normalised provider event is applied here.

Each event is recorded under its unique (provider, event_id) in the same transaction as its effect,
so a replay changes nothing. Events may arrive in any order: an event about a purchase or
subscription we have not seen settle yet first re-fetches the checkout from the provider and applies
its current state, and every effect is guarded by the row's own state (a purchase is applied once).
"""
import logging
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from billing.models import Payment, ProviderEventRecord, Purchase, Subscription
from billing.money import Money
from billing.providers.base import CheckoutState, EventKind, ProviderEvent
from billing.providers.registry import provider_named
from billing.services import payg
from billing.services.ledger import refund_debit
from mailcore.accounts.models import Account, Plan
from mailcore.events.services import emit
from mailcore.partners.models import HostingPartner
from mailcore.partners.services import slots_grant
from mailcore.timefmt import iso

log = logging.getLogger(__name__)
FREE = "free"
SLOT_TERM_DAYS = 30


def provider_event_apply(event: ProviderEvent) -> bool:
    """Apply one event exactly once; returns False for a replay."""
    try:
        with transaction.atomic():
            ProviderEventRecord.objects.create(
                provider=event.provider, event_id=event.event_id, kind=event.kind,
                reference=event.reference or event.subscription_ref, payload=event.payload)
            _apply(event)
    except IntegrityError:
        if ProviderEventRecord.objects.filter(provider=event.provider, event_id=event.event_id).exists():
            return False
        raise
    return True


def _apply(event: ProviderEvent) -> None:
    handler = {
        EventKind.CHECKOUT_PAID: _checkout_paid,
        EventKind.CHECKOUT_FAILED: _checkout_ended,
        EventKind.CHECKOUT_EXPIRED: _checkout_ended,
        EventKind.RENEWAL_PAID: _renewal_paid,
        EventKind.RENEWAL_FAILED: _renewal_failed,
        EventKind.SUBSCRIPTION_UPDATED: _subscription_updated,
        EventKind.SUBSCRIPTION_CANCELED: _subscription_canceled,
        EventKind.REFUNDED: _refunded,
    }.get(event.kind)
    if handler is not None:
        handler(event)


def _purchase(event: ProviderEvent) -> Purchase | None:
    found = Purchase.objects.select_for_update().filter(provider=event.provider)
    if event.reference:
        return found.filter(reference=event.reference).first()
    if event.provider_ref:
        return found.filter(provider=event.provider, provider_ref=event.provider_ref).first()
    return None


# checkouts


def _checkout_paid(event: ProviderEvent) -> None:
    purchase = _purchase(event)
    if purchase is None:
        log.warning("paid checkout %s for an unknown purchase %r", event.provider_ref, event.reference)
        return
    purchase_settle(purchase, CheckoutState(
        status="paid", subscription_ref=event.subscription_ref, payment_ref=event.payment_ref,
        amount_minor=event.amount_minor, currency=event.currency, period_start=event.period_start,
        period_end=event.period_end))


def _checkout_ended(event: ProviderEvent) -> None:
    purchase = _purchase(event)
    if purchase is not None:
        purchase_settle(purchase, CheckoutState(
            status="failed" if event.kind == EventKind.CHECKOUT_FAILED else "expired"))


def purchase_settle(purchase: Purchase, state: CheckoutState) -> bool:
    """Apply a checkout's state (from an event or re-fetched); the purchase row must be locked.
    Returns whether this call applied the purchase."""
    if state.status in ("failed", "expired") and purchase.status == Purchase.Status.PENDING:
        purchase.status = state.status
        purchase.save(update_fields=["status"])
        if state.status == "failed":
            _payment_failed(purchase)
        return False
    if state.status != "paid" or purchase.applied_at is not None:
        return False
    if (state.amount_minor is not None and state.amount_minor != purchase.amount_minor) or (
            state.currency and state.currency.lower() != purchase.currency):
        log.error("purchase %s: the provider took %s %s, the checkout asked %s %s; not applied (operator: refund "
                  "or settle by hand)", purchase.reference, state.amount_minor, state.currency,
                  purchase.amount_minor, purchase.currency)
        return False
    now = timezone.now()
    purchase.status, purchase.paid_at, purchase.applied_at = Purchase.Status.PAID, now, now
    purchase.save(update_fields=["status", "paid_at", "applied_at"])
    payment, _ = Payment.objects.get_or_create(
        provider=purchase.provider, provider_ref=state.payment_ref or f"{purchase.provider_ref}:first",
        defaults={"account": purchase.account, "purchase": purchase, "amount_minor": purchase.amount_minor,
                  "currency": purchase.currency, "description": purchase.description, "paid_at": now})
    EFFECTS[purchase.kind](purchase, state, payment)
    return True


def _payment_failed(purchase: Purchase) -> None:
    """Tell the buyer's account (a partner: its customer's checkout) that a payment was declined,
    once: only the pending -> failed change calls this."""
    data = {**_purchase_data(purchase), "kind": purchase.kind, "item": purchase.item,
            "description": purchase.description, "failed_at": iso(timezone.now())}
    if purchase.partner_mailbox_id is not None:
        data.update(mailbox_id=purchase.partner_mailbox_id, email_address=purchase.partner_mailbox.mailbox.address)
    emit(account=purchase.account, name="payment.failed", data=data)


def purchase_sync(purchase: Purchase) -> bool:
    """Re-fetch a pending purchase's checkout from its provider and apply what it says (reconcile,
    out-of-order events, and the waiting page's poll)."""
    if purchase.applied_at is not None or purchase.status != Purchase.Status.PENDING:
        return False
    state = provider_named(purchase.provider).checkout_state(purchase.provider_ref)
    if state.status not in ("paid", "failed", "expired"):
        return False
    with transaction.atomic():
        locked = Purchase.objects.select_for_update().get(pk=purchase.pk)
        return purchase_settle(locked, state)


# what each kind of purchase gives


def _plan_bought(purchase: Purchase, state: CheckoutState, payment: Payment) -> None:
    start = state.period_start or timezone.now()
    superseded = list(Subscription.objects.filter(
        account=purchase.account, purchase__kind=Purchase.Kind.PLAN,
        status__in=[Subscription.Status.ACTIVE, Subscription.Status.PAST_DUE]).exclude(
        provider_ref=state.subscription_ref).values_list("provider", "provider_ref"))
    for provider, ref in superseded:  # two checkouts both paid: end the older one at its provider too
        transaction.on_commit(lambda provider=provider, ref=ref: _cancel_at_provider(provider, ref))
    Subscription.objects.filter(provider_ref__in=[ref for _, ref in superseded], account=purchase.account).update(
        status=Subscription.Status.CANCELED)
    Subscription.objects.update_or_create(
        provider=purchase.provider, provider_ref=state.subscription_ref or purchase.provider_ref,
        defaults={"account": purchase.account, "purchase": purchase, "plan_code": purchase.item,
                  "amount_minor": purchase.amount_minor, "currency": purchase.currency,
                  "status": Subscription.Status.ACTIVE, "current_period_start": start,
                  "current_period_end": state.period_end or start + timedelta(days=30)})
    _account_plan_set(purchase.account, purchase.item)


def _cancel_at_provider(provider: str, ref: str) -> None:
    try:
        provider_named(provider).subscription_cancel(ref, at_period_end=False)
    except Exception:  # billing_reconcile and the operator console see it still running
        log.exception("could not cancel the superseded %s subscription %s", provider, ref)


def _pool_bought(purchase: Purchase, state: CheckoutState, payment: Payment) -> None:
    partner = HostingPartner.objects.select_for_update().get(account=purchase.account)
    slots_grant(partner=partner, count=purchase.quantity, term_days=SLOT_TERM_DAYS * purchase.months,
                plan_type=purchase.item)
    if partner.status in (HostingPartner.Status.TRIAL, HostingPartner.Status.EXPIRED):
        partner.status = HostingPartner.Status.ACTIVE
        partner.save(update_fields=["status"])
    emit(account=purchase.account, name="partner_pool.purchased",
         data={**_purchase_data(purchase), "plan_type": purchase.item, "months": purchase.months,
               "slots_unused": partner.slots.filter(status="unused").count()})


def _addon_bought(purchase: Purchase, state: CheckoutState, payment: Payment) -> None:
    if purchase.kind == Purchase.Kind.DOMAIN_SLOT:
        HostingPartner.objects.filter(account=purchase.account).update(
            extra_domain_slots=F("extra_domain_slots") + purchase.quantity)
    else:
        HostingPartner.objects.filter(account=purchase.account).update(
            extra_storage_mb=F("extra_storage_mb") + purchase.quantity * 1024)
    partner = HostingPartner.objects.get(account=purchase.account)
    emit(account=purchase.account, name="partner_addon.purchased",
         data={**_purchase_data(purchase), "addon_type": "domain_slot" if purchase.kind == "domain_slot" else "storage",
               "domain_limit": partner.domain_limit, "extra_storage_mb": partner.extra_storage_mb})


EFFECTS = {
    Purchase.Kind.PLAN: _plan_bought,
    Purchase.Kind.SLOT_POOL: _pool_bought,
    Purchase.Kind.DOMAIN_SLOT: _addon_bought,
    Purchase.Kind.STORAGE: _addon_bought,
    Purchase.Kind.MAILBOX: payg.mailbox_first_payment,
    Purchase.Kind.MAILBOX_STORAGE: payg.mailbox_addon_bought,
    Purchase.Kind.MAILBOX_EXTRA: payg.mailbox_addon_bought,
}


def _purchase_data(purchase: Purchase) -> dict:
    return {"reference": purchase.reference, "quantity": purchase.quantity,
            "amount": Money(int(purchase.amount_minor), purchase.currency).as_number(),
            "currency": purchase.currency, "payment_provider": purchase.provider}


def _account_plan_set(account: Account, plan_code: str) -> None:
    Account.objects.filter(pk=account.pk).update(plan=Plan.objects.get(code=plan_code))


# subscriptions


def _subscription(event: ProviderEvent) -> Subscription | None:
    subscription = Subscription.objects.select_for_update().filter(
        provider=event.provider, provider_ref=event.subscription_ref).first()
    if subscription is None and event.reference:
        # its first payment not applied yet (events out of order): settle the checkout first
        purchase = Purchase.objects.select_for_update().filter(reference=event.reference).first()
        if purchase is not None and purchase.applied_at is None:
            purchase_settle(purchase, provider_named(purchase.provider).checkout_state(purchase.provider_ref))
            subscription = Subscription.objects.select_for_update().filter(
                provider=event.provider, provider_ref=event.subscription_ref).first()
    if subscription is None:
        log.warning("%s for an unknown subscription %s", event.kind, event.subscription_ref)
    return subscription


def _is_mailbox(subscription: Subscription) -> bool:
    """A pay-as-you-go mailbox's subscription (even once its mailbox is deleted), never the account's plan."""
    return subscription.purchase.kind == Purchase.Kind.MAILBOX


def _period(subscription: Subscription, event: ProviderEvent) -> None:
    if event.period_end and event.period_end >= subscription.current_period_end:
        subscription.current_period_start = event.period_start or subscription.current_period_start
        subscription.current_period_end = event.period_end


def _renewal_paid(event: ProviderEvent) -> None:
    subscription = _subscription(event)
    if subscription is None or subscription.status == Subscription.Status.CANCELED:
        return
    _period(subscription, event)
    subscription.status = Subscription.Status.ACTIVE
    subscription.save()
    payment, created = Payment.objects.get_or_create(
        provider=event.provider, provider_ref=event.payment_ref or event.event_id,
        defaults={"account": subscription.account, "purchase": subscription.purchase,
                  "amount_minor": event.amount_minor if event.amount_minor is not None else subscription.amount_minor,
                  "currency": subscription.currency, "paid_at": timezone.now(),
                  "description": f"{subscription.purchase.description} (renewal)"})
    if _is_mailbox(subscription):
        if created:  # a second event about the same payment (Stripe's invoice.payment_succeeded) confirms nothing new
            payg.mailbox_renewal_paid(subscription, payment)
    else:
        _account_plan_set(subscription.account, subscription.plan_code)


def _renewal_failed(event: ProviderEvent) -> None:
    """The provider retries on its own schedule; the plan stays until it gives up (canceled)."""
    subscription = _subscription(event)
    if subscription is not None and subscription.status == Subscription.Status.ACTIVE:
        subscription.status = Subscription.Status.PAST_DUE
        subscription.save(update_fields=["status", "updated_at"])
        if _is_mailbox(subscription):  # a pay-as-you-go mailbox is disabled at once
            payg.mailbox_renewal_failed(subscription)


def _subscription_updated(event: ProviderEvent) -> None:
    subscription = _subscription(event)
    if subscription is None or subscription.status == Subscription.Status.CANCELED:
        return
    _period(subscription, event)
    if event.cancel_at_period_end is not None:
        subscription.cancel_at_period_end = event.cancel_at_period_end
    kind, _, code = event.product.partition(":")
    if kind in ("plan", "mailbox") and code and code != subscription.plan_code:
        subscription.plan_code = code
        if event.unit_amount_minor is not None:
            subscription.amount_minor = event.unit_amount_minor
        if _is_mailbox(subscription):
            payg.mailbox_plan_changed(subscription, code)
        else:
            _account_plan_set(subscription.account, subscription.plan_code)
    subscription.save()


def _subscription_canceled(event: ProviderEvent) -> None:
    """Ended (at the period end, at once, or after failed retries): the account drops to Free and
    keeps its data; features above Free stop at their gates."""
    subscription = _subscription(event)
    if subscription is None or subscription.status == Subscription.Status.CANCELED:
        return
    subscription.status = Subscription.Status.CANCELED
    subscription.save(update_fields=["status", "updated_at"])
    if _is_mailbox(subscription):
        payg.mailbox_canceled(subscription)
        return
    still_paying = Subscription.objects.filter(account=subscription.account, purchase__kind=Purchase.Kind.PLAN,
                                               status__in=[
        Subscription.Status.ACTIVE, Subscription.Status.PAST_DUE]).exists()
    if not still_paying:
        _account_plan_set(subscription.account, FREE)


def _refunded(event: ProviderEvent) -> None:
    payment = Payment.objects.select_for_update().filter(provider=event.provider,
                                                         provider_ref=event.payment_ref).first()
    if payment is None or payment.refunded_at is not None:
        return
    payment.refunded_at = timezone.now()
    payment.save(update_fields=["refunded_at"])
    refund_debit(payment=payment)
    if not payment.purchase.payments.filter(refunded_at__isnull=True).exists():
        Purchase.objects.filter(pk=payment.purchase_id).update(status=Purchase.Status.REFUNDED)
