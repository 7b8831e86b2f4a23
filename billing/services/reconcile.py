"""Apply what a provider knows and we missed (a lost webhook): `manage.py billing_reconcile`.

Pending purchases of the last `days` days are re-fetched (`purchase_sync`, every provider), and
each active or past-due subscription at a provider that can report one (`subscription_state`,
Stripe) is compared with ours: ended, renewed, failing or changed becomes a synthetic event applied
through `provider_event_apply` under a deterministic id, so a second run changes nothing.
"""
import logging
from datetime import timedelta

from django.utils import timezone

from billing.models import Payment, Purchase, Subscription
from billing.providers.base import EventKind, ProviderEvent, SubscriptionState
from billing.providers.registry import provider_named
from billing.services.events import provider_event_apply, purchase_sync
from mailcore.errors import DomainError

log = logging.getLogger(__name__)


def billing_reconcile(*, days: int) -> dict[str, int]:
    done = {"purchases": 0, "settled": 0, "subscriptions": 0, "applied": 0, "errors": 0}
    pending = Purchase.objects.filter(status=Purchase.Status.PENDING, applied_at__isnull=True,
                                      created_at__gte=timezone.now() - timedelta(days=days)).exclude(provider_ref="")
    for purchase in pending.order_by("created_at", "id"):
        done["purchases"] += 1
        try:
            purchase_sync(purchase)
        except DomainError as exc:
            log.warning("reconcile: purchase %s not re-checked: %s", purchase.reference, exc)
            done["errors"] += 1
            continue
        done["settled"] += Purchase.objects.filter(pk=purchase.pk).exclude(status=Purchase.Status.PENDING).count()
    live = Subscription.objects.filter(status__in=[Subscription.Status.ACTIVE, Subscription.Status.PAST_DUE])
    for subscription in live.order_by("created_at", "id"):
        fetch = getattr(provider_named(subscription.provider), "subscription_state", None)
        if fetch is None:  # the provider reports every change by its own events (local)
            continue
        done["subscriptions"] += 1
        try:
            events = subscription_events(subscription, fetch(subscription.provider_ref))
        except DomainError as exc:
            log.warning("reconcile: subscription %s not re-checked: %s", subscription.provider_ref, exc)
            done["errors"] += 1
            continue
        done["applied"] += sum(provider_event_apply(event) for event in events)
    return done


def subscription_events(subscription: Subscription, state: SubscriptionState) -> list[ProviderEvent]:
    """The events that would bring our subscription to the provider's `state` (a SubscriptionState)."""
    ref, end = subscription.provider_ref, int(state.period_end.timestamp()) if state.period_end else 0
    common = {"provider": subscription.provider, "subscription_ref": ref, "currency": state.currency,
              "period_start": state.period_start, "period_end": state.period_end,
              "payload": {"reconcile": True, "status": state.status, "period_end": end}}
    if state.status in ("canceled", "incomplete_expired"):
        return [ProviderEvent(event_id=f"reconcile:{ref}:canceled", kind=EventKind.SUBSCRIPTION_CANCELED, **common)]
    events = []
    behind = state.period_end is not None and state.period_end > subscription.current_period_end
    unrecorded = not Payment.objects.filter(provider=subscription.provider, provider_ref=state.latest_invoice).exists()
    if (state.status == "active" and state.latest_invoice_paid and state.latest_invoice_reason == "subscription_cycle"
            and (behind or unrecorded or subscription.status == Subscription.Status.PAST_DUE)):
        events.append(ProviderEvent(event_id=f"reconcile:{ref}:renewed:{state.latest_invoice}",
                                    kind=EventKind.RENEWAL_PAID, payment_ref=state.latest_invoice,
                                    amount_minor=state.latest_amount_paid, **common))
    elif state.status in ("past_due", "unpaid") and subscription.status == Subscription.Status.ACTIVE:
        events.append(ProviderEvent(event_id=f"reconcile:{ref}:past_due:{end}", kind=EventKind.RENEWAL_FAILED,
                                    **common))
    kind, _, code = state.product.partition(":")  # plan:<code>, or mailbox:<code> for a pay-as-you-go mailbox
    changed = kind in ("plan", "mailbox") and code != subscription.plan_code
    if changed or state.cancel_at_period_end != subscription.cancel_at_period_end:
        events.append(ProviderEvent(
            event_id=f"reconcile:{ref}:updated:{state.product}:{state.unit_amount_minor}:"
                     f"{int(state.cancel_at_period_end)}:{end}",
            kind=EventKind.SUBSCRIPTION_UPDATED, product=state.product, unit_amount_minor=state.unit_amount_minor,
            cancel_at_period_end=state.cancel_at_period_end, **common))
    return events
