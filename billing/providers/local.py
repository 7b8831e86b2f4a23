"""The embedded provider: its hosted checkout is a page of this app, its webhooks are signed events
delivered through the same verified-event path as Stripe's, and its clock can be moved forward
(`manage.py billing_clock advance`) to rehearse renewals. Refused in production (settings).

Like a real provider's servers it keeps the events it sends (`LocalEvent` rows, written in the
transaction that caused them) and posts them after the commit; billing's `deliver-local-events` job
(billing.services.local_events) posts any left over. The provider never imports that intake above
it: BillingConfig.ready() registers the function that delivers (`local_event_recorded`)."""
import json
import secrets
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.crypto import salted_hmac

from billing.models import LocalCheckout, LocalClock, LocalEvent, LocalSubscription
from billing.providers import signing
from billing.providers.base import (
    Checkout,
    CheckoutRequest,
    CheckoutState,
    EventKind,
    ProviderEvent,
    SignatureInvalid,
)
from mailcore.hooks import Hook
from mailcore.timefmt import iso

NAME = "local"
SIGNATURE_HEADER = "X-Local-Signature"
PERIOD = timedelta(days=30)
RETRY_EVERY = timedelta(days=3)
RENEWAL_ATTEMPTS = 3  # like Stripe's smart retries: then the subscription is canceled


def _secret() -> str:
    return salted_hmac("billing.local-provider", "webhook", algorithm="sha256").hexdigest()


def clock_now() -> datetime:
    clock = LocalClock.objects.first()
    return timezone.now() + timedelta(seconds=clock.offset_seconds if clock else 0)


# Called with event_id= (the row's id) right after the recording transaction commits: billing's
# services deliver it to the intake (registered in BillingConfig.ready(); providers may not import
# the services above them).
local_event_recorded = Hook("local_event_recorded")


def _deliver(kind: str, **fields) -> None:
    """Record an event as the provider's servers would send it, to be posted once the caller's
    transaction commits (at once, as before, when no transaction is open)."""
    event_id = f"lev_{secrets.token_hex(12)}"
    body = json.dumps({"id": event_id, "type": kind, "created": iso(clock_now()), **fields}, separators=(",", ":"))
    event = LocalEvent.objects.create(event_id=event_id, kind=kind, body=body)
    for deliver in local_event_recorded.functions:  # a failure is logged; the job tries again
        transaction.on_commit(partial(deliver, event_id=event.pk), robust=True)


def event_signed(event: LocalEvent) -> tuple[bytes, dict[str, str]]:
    """The body and headers of a POST of a recorded event, signed now: like Stripe, each attempt
    carries a fresh timestamp, so a retry is never refused as stale."""
    body = event.body.encode()
    return body, {SIGNATURE_HEADER: signing.sign(_secret(), body)}


class LocalProvider:
    name = NAME

    def checkout_create(self, request: CheckoutRequest) -> Checkout:
        checkout = LocalCheckout.objects.create(
            token=secrets.token_urlsafe(24), reference=request.reference, description=request.description,
            amount_minor=request.amount_minor, currency=request.currency, recurring=request.recurring,
            payment_method=request.payment_method, return_url=request.return_url)
        url = settings.PUBLIC_BASE_URL.rstrip("/") + reverse("local-checkout", args=[checkout.token])
        return Checkout(provider_ref=checkout.token, checkout_url=url)

    def checkout_state(self, provider_ref: str) -> CheckoutState:
        checkout = LocalCheckout.objects.filter(token=provider_ref).first()
        if checkout is None:
            return CheckoutState(status="expired")
        subscription = getattr(checkout, "subscription", None)
        return CheckoutState(status=checkout.status, amount_minor=checkout.amount_minor, currency=checkout.currency,
                             subscription_ref=subscription.token if subscription else "",
                             payment_ref=f"lpay_{checkout.token}" if checkout.status == "paid" else "",
                             period_start=subscription.period_start if subscription else None,
                             period_end=subscription.period_end if subscription else None)

    def webhook_parse(self, body: bytes, headers) -> ProviderEvent:
        signing.verify(_secret(), body, headers.get(SIGNATURE_HEADER))
        try:
            data = json.loads(body)
            return ProviderEvent(
                provider=NAME, event_id=str(data["id"]), kind=str(data["type"]),
                reference=data.get("reference", ""), provider_ref=data.get("checkout", ""),
                subscription_ref=data.get("subscription", ""), payment_ref=data.get("payment", ""),
                amount_minor=data.get("amount_minor"), currency=data.get("currency", ""),
                period_start=_parse_time(data.get("period_start")), period_end=_parse_time(data.get("period_end")),
                product=data.get("product", ""), unit_amount_minor=data.get("unit_amount_minor"),
                cancel_at_period_end=data.get("cancel_at_period_end"), payload=data)
        except (ValueError, KeyError, TypeError) as exc:
            raise SignatureInvalid(f"unreadable event: {exc}") from None

    # the buyer's side: the hosted checkout page's two buttons

    def checkout_complete(self, token: str, *, paid: bool) -> LocalCheckout | None:
        """Settle an open checkout and deliver its event; None if it is not open any more."""
        with transaction.atomic():
            checkout = LocalCheckout.objects.select_for_update().filter(token=token).first()
            if checkout is None or checkout.status != LocalCheckout.Status.OPEN:
                return None
            checkout.status = LocalCheckout.Status.PAID if paid else LocalCheckout.Status.FAILED
            checkout.save(update_fields=["status"])
            fields = {"reference": checkout.reference, "checkout": checkout.token,
                      "amount_minor": checkout.amount_minor, "currency": checkout.currency}
            if not paid:
                _deliver(EventKind.CHECKOUT_FAILED, **fields)
                return checkout
            if checkout.recurring:
                start = clock_now()
                subscription = LocalSubscription.objects.create(
                    token=f"lsub_{secrets.token_hex(10)}", checkout=checkout, amount_minor=checkout.amount_minor,
                    currency=checkout.currency, description=checkout.description, period_start=start,
                    period_end=start + PERIOD)
                fields.update(subscription=subscription.token, period_start=iso(subscription.period_start),
                              period_end=iso(subscription.period_end))
            _deliver(EventKind.CHECKOUT_PAID, payment=f"lpay_{checkout.token}", **fields)
            return checkout

    def checkout_expire(self, provider_ref: str) -> None:
        LocalCheckout.objects.filter(token=provider_ref, status=LocalCheckout.Status.OPEN).update(
            status=LocalCheckout.Status.EXPIRED)

    # subscriptions

    def subscription_cancel(self, subscription_ref: str, *, at_period_end: bool = True) -> None:
        with transaction.atomic():
            subscription = LocalSubscription.objects.select_for_update().get(token=subscription_ref)
            if subscription.status == LocalSubscription.Status.CANCELED:
                return
            if at_period_end:
                subscription.cancel_at_period_end = True
                subscription.save(update_fields=["cancel_at_period_end"])
                _deliver(EventKind.SUBSCRIPTION_UPDATED, **_subscription_fields(subscription))
            else:
                subscription.status = LocalSubscription.Status.CANCELED
                subscription.save(update_fields=["status"])
                _deliver(EventKind.SUBSCRIPTION_CANCELED, **_subscription_fields(subscription))

    def subscription_change(self, subscription_ref: str, *, product: str, unit_amount_minor: int,
                            description: str) -> None:
        with transaction.atomic():
            subscription = LocalSubscription.objects.select_for_update().get(token=subscription_ref)
            subscription.amount_minor, subscription.description = unit_amount_minor, description
            subscription.cancel_at_period_end = False
            subscription.save(update_fields=["amount_minor", "description", "cancel_at_period_end"])
            _deliver(EventKind.SUBSCRIPTION_UPDATED, product=product, unit_amount_minor=unit_amount_minor,
                     **_subscription_fields(subscription))

    def refund(self, payment_ref: str, *, amount_minor: int | None = None) -> None:
        _deliver(EventKind.REFUNDED, payment=payment_ref, amount_minor=amount_minor)


def _subscription_fields(subscription: LocalSubscription) -> dict:
    return {"subscription": subscription.token, "reference": subscription.checkout.reference,
            "period_start": iso(subscription.period_start), "period_end": iso(subscription.period_end),
            "amount_minor": subscription.amount_minor, "currency": subscription.currency,
            "cancel_at_period_end": subscription.cancel_at_period_end}


def _parse_time(value):
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def clock_advance(*, days: int, fail_renewals: bool = False) -> dict[str, int]:
    """Move the provider's time forward a day at a time, charging renewals that fall due (or
    failing them, retried every 3 days, canceled after the 3rd failure) and ending subscriptions
    set to cancel at the period end. Events go through the webhook intake like real ones."""
    done = {"renewed": 0, "failed": 0, "canceled": 0}
    for _ in range(days):
        with transaction.atomic():
            clock, _created = LocalClock.objects.select_for_update().get_or_create(pk=1)
            clock.offset_seconds += 86400
            clock.save(update_fields=["offset_seconds"])
        now = clock_now()
        due = LocalSubscription.objects.exclude(status=LocalSubscription.Status.CANCELED).filter(period_end__lte=now)
        retry = LocalSubscription.objects.filter(status=LocalSubscription.Status.PAST_DUE, next_attempt_at__lte=now)
        for subscription in (due | retry).distinct():
            with transaction.atomic():
                done[_renew(subscription, now, fail=fail_renewals)] += 1
    return done


def _renew(subscription: LocalSubscription, now: datetime, *, fail: bool) -> str:
    if subscription.cancel_at_period_end:
        subscription.status = LocalSubscription.Status.CANCELED
        subscription.save(update_fields=["status"])
        _deliver(EventKind.SUBSCRIPTION_CANCELED, **_subscription_fields(subscription))
        return "canceled"
    if fail:
        subscription.failed_attempts += 1
        if subscription.failed_attempts >= RENEWAL_ATTEMPTS:
            subscription.status = LocalSubscription.Status.CANCELED
            subscription.save(update_fields=["status", "failed_attempts"])
            _deliver(EventKind.SUBSCRIPTION_CANCELED, **_subscription_fields(subscription))
            return "canceled"
        subscription.status, subscription.next_attempt_at = LocalSubscription.Status.PAST_DUE, now + RETRY_EVERY
        subscription.save(update_fields=["status", "failed_attempts", "next_attempt_at"])
        _deliver(EventKind.RENEWAL_FAILED, **_subscription_fields(subscription))
        return "failed"
    subscription.renewals += 1
    subscription.status, subscription.failed_attempts, subscription.next_attempt_at = "active", 0, None
    subscription.period_start = subscription.period_end
    subscription.period_end = subscription.period_start + PERIOD
    subscription.save()
    _deliver(EventKind.RENEWAL_PAID, payment=f"lpay_{subscription.token}_{subscription.renewals}",
             **_subscription_fields(subscription))
    return "renewed"
