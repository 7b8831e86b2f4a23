"""Pay-as-you-go mailboxes: the partner's retail prices, a checkout per mailbox, its subscription's
life cycle (applied from verified provider events only), per-mailbox add-ons and abandonment.

State table (spec "Partner mailbox"): create -> pending_payment (account disabled, checkout_url);
first payment -> active (enabled, payment_confirmed); renewal -> active (payment_confirmed);
renewal fails -> suspended (disabled, payment_failed; a later successful retry re-enables it);
canceled -> expired (disabled, expired); 7 days unpaid or DELETE while pending -> deleted with its
account (payment_abandoned for the former); a payment for a deleted mailbox is refunded.
"""
import logging
from datetime import timedelta
from decimal import Decimal, InvalidOperation

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from billing.models import Payment, Purchase, RetailPrice, Subscription
from billing.money import Money
from billing.providers.registry import provider_named
from billing.selectors.prices import price, wholesale_monthly
from billing.services.ledger import margin_credit
from billing.services.purchases import purchase_start
from mailcore.domains.models import Domain
from mailcore.errors import DomainError, ErrorCode, InvalidFields
from mailcore.events.services import emit
from mailcore.mailboxes.models import Mailbox
from mailcore.partners.mailboxes import (
    Funding,
    partner_mailbox_event_data,
    partner_mailbox_create,
    partner_mailbox_delete,
    partner_mailbox_purge,
    partner_mailbox_set_state,
)
from mailcore.partners.models import HostingPartner, PartnerMailbox
from mailcore.partners.services import slots_grant
from mailcore.timefmt import iso

log = logging.getLogger(__name__)
PENDING_LIFETIME = timedelta(days=7)
PLANS = ("pro", "premium")
ADDON_TYPES = ("extra_mailbox", "extra_storage")
STORAGE_GB_PER_UNIT = 1


class NoRetailPrice(DomainError):
    code = ErrorCode.INVALID


class NotPayAsYouGo(DomainError):
    code = ErrorCode.INVALID


class NotAllowedNow(DomainError):
    code = ErrorCode.INVALID


# retail prices


def to_minor(value, field: str) -> int:
    try:
        amount = Decimal(str(value))
    except (InvalidOperation, ValueError):
        raise InvalidFields({field: ["a number"]}) from None
    minor = amount * 100
    if amount <= 0 or minor != minor.to_integral_value():
        raise InvalidFields({field: ["a positive amount with at most 2 decimals"]})
    return int(minor)


def retail_price_set(*, partner: HostingPartner, plan_type: str, currency: str, retail_price) -> RetailPrice:
    if plan_type not in PLANS:
        raise InvalidFields({"plan_type": ["pro or premium"]})
    if currency not in ("usd", "ngn"):
        raise InvalidFields({"currency": ["usd or ngn"]})
    if currency != partner.billing_currency:
        raise InvalidFields({"currency": [f"your customers pay in your billing currency, "
                                          f"{partner.billing_currency.upper()}: set the price in it"]})
    minor = to_minor(retail_price, "retail_price")
    wholesale = wholesale_monthly(plan_type, currency)
    if minor < wholesale.minor:
        raise InvalidFields({"retail_price": [
            f"at least the wholesale rate for {plan_type} in {currency.upper()}, {wholesale.as_number()} ({wholesale})"]})
    row, _ = RetailPrice.objects.update_or_create(partner=partner, plan_type=plan_type, currency=currency,
                                                  defaults={"amount_minor": minor})
    return row


def retail_prices(*, partner: HostingPartner) -> list[dict]:
    """Every retail price set, with the wholesale rate and the margin beside it."""
    rows = []
    for row in RetailPrice.objects.filter(partner=partner):
        retail = Money(int(row.amount_minor), row.currency)
        wholesale = wholesale_monthly(row.plan_type, row.currency)
        rows.append({"plan_type": row.plan_type, "currency": row.currency, "retail_price": retail,
                     "wholesale_price": wholesale, "margin": Money(retail.minor - wholesale.minor, row.currency),
                     "updated_at": row.updated_at})
    return rows


def _retail(partner: HostingPartner, plan_type: str) -> Money:
    row = RetailPrice.objects.filter(partner=partner, plan_type=plan_type, currency=partner.billing_currency).first()
    if row is None:
        raise NoRetailPrice(f"pay-as-you-go needs a retail price for the {plan_type} plan in "
                            f"{partner.billing_currency.upper()}; set one with POST /v1/hosting/retail-pricing")
    return Money(int(row.amount_minor), row.currency)


# create, checkout, delete


def _mailbox_checkout(partner_mailbox: PartnerMailbox, return_url: str) -> Purchase:
    partner = partner_mailbox.partner
    plan = partner_mailbox.plan_type
    return purchase_start(
        account=partner.account, kind=Purchase.Kind.MAILBOX, item=plan, price_item=f"mailbox:{plan}",
        unit=_retail(partner, plan), quantity=1, currency=partner.billing_currency, return_url=return_url,
        recurring=True, partner_mailbox=partner_mailbox,
        wholesale_minor=wholesale_monthly(plan, partner.billing_currency).minor,
        description=f"{partner_mailbox.mailbox.address}: {plan.title()} mailbox, monthly")


def payg_mailbox_open(*, partner: HostingPartner, domain: Domain, local_part: str, password: str, plan_id: str,
                      return_url: str, display_name: str = "") -> PartnerMailbox:
    """A disabled mailbox waiting for its customer's first payment, and its checkout (or neither)."""
    if plan_id in PLANS:
        _retail(partner, plan_id)  # 400 before anything is created
    pending = Funding(PartnerMailbox.Status.PENDING_PAYMENT, timezone.now() + PENDING_LIFETIME, enabled=False,
                      funding_mode=PartnerMailbox.Funding.PAY_AS_YOU_GO)
    with transaction.atomic():
        partner_mailbox = partner_mailbox_create(partner=partner, domain=domain, local_part=local_part,
                                                 password=password, plan_id=plan_id, display_name=display_name,
                                                 fund=lambda: pending)
        _mailbox_checkout(partner_mailbox, return_url)
    return partner_mailbox


def open_checkout(partner_mailbox: PartnerMailbox) -> Purchase | None:
    return partner_mailbox.purchases.filter(kind=Purchase.Kind.MAILBOX, status=Purchase.Status.PENDING).first()


def payg_checkout_url(*, partner_mailbox: PartnerMailbox) -> str | None:
    """A working checkout link while the mailbox waits for its first payment: a fresh checkout when
    the provider says the last one ended. The mailbox row is locked while deciding, so the partner's
    page and the customer's Try again never both open one; the checkouts it replaces are closed at
    the provider first (a payment that still arrives for one is refunded: mailbox_first_payment)."""
    if partner_mailbox.status != PartnerMailbox.Status.PENDING_PAYMENT:
        return None
    seen = open_checkout(partner_mailbox)
    if seen is not None:
        state = provider_named(seen.provider).checkout_state(seen.provider_ref)
        if state.status in ("open", "paid"):  # paid: its event is on the way
            return seen.checkout_url
    with transaction.atomic():
        locked = PartnerMailbox.objects.select_for_update().filter(
            pk=partner_mailbox.pk, status=PartnerMailbox.Status.PENDING_PAYMENT).first()
        if locked is None:
            return None
        current = open_checkout(locked)
        if current is not None and (seen is None or current.pk != seen.pk):
            return current.checkout_url  # opened meanwhile by the other caller
        replaced = list(locked.purchases.filter(kind=Purchase.Kind.MAILBOX, status__in=[
            Purchase.Status.PENDING, Purchase.Status.FAILED]))
        Purchase.objects.filter(pk__in=[row.pk for row in replaced if row.status == Purchase.Status.PENDING]).update(
            status=Purchase.Status.EXPIRED)
        for row in replaced:
            _provider_quietly(row.provider, "checkout_expire", row.provider_ref)
        last = locked.purchases.filter(kind=Purchase.Kind.MAILBOX).order_by("-created_at", "-id").first()
        return _mailbox_checkout(locked, last.return_url if last else "").checkout_url


def payg_last_declined(*, partner_mailbox: PartnerMailbox) -> Purchase | None:
    """The mailbox's latest ended checkout, when the provider declined it (the partner's notice; a
    new open checkout made for the retry does not hide it)."""
    last = partner_mailbox.purchases.filter(kind=Purchase.Kind.MAILBOX).exclude(
        status=Purchase.Status.PENDING).order_by("-created_at", "-id").first()
    return last if last is not None and last.status == Purchase.Status.FAILED else None


def payg_checkout_retry(*, purchase: Purchase) -> str | None:
    """Where the customer whose checkout was declined or expired pays again: the mailbox's working
    checkout (a fresh one once the last has ended), or None when it waits for no payment any more."""
    if purchase.kind != Purchase.Kind.MAILBOX or purchase.partner_mailbox is None:
        return None
    return payg_checkout_url(partner_mailbox=purchase.partner_mailbox)


def _expire_checkouts(partner_mailbox: PartnerMailbox) -> None:
    for purchase in partner_mailbox.purchases.filter(status=Purchase.Status.PENDING):
        Purchase.objects.filter(pk=purchase.pk).update(status=Purchase.Status.EXPIRED)
        provider, ref = purchase.provider, purchase.provider_ref
        transaction.on_commit(lambda provider=provider, ref=ref: _provider_quietly(
            provider, "checkout_expire", ref))


def _provider_quietly(provider: str, method: str, *args, **kwargs) -> None:
    """A follow-up call at the provider after our change is committed; a failure is logged (a
    payment that still completes is refunded when its event arrives)."""
    try:
        getattr(provider_named(provider), method)(*args, **kwargs)
    except Exception:
        log.exception("%s.%s%s failed", provider, method, args)


def payg_mailbox_delete(*, partner_mailbox: PartnerMailbox) -> None:
    """Pending: the mailbox and its account go, the open checkout expires. Otherwise as any partner
    mailbox (account kept, deactivated), and its subscription ends now at the provider."""
    with transaction.atomic():
        partner_mailbox = PartnerMailbox.objects.select_for_update().get(pk=partner_mailbox.pk)  # vs. a payment
        if partner_mailbox.status == PartnerMailbox.Status.PENDING_PAYMENT:
            _expire_checkouts(partner_mailbox)
            partner_mailbox_purge(partner_mailbox=partner_mailbox)
            return
        live = list(_live_subscriptions(partner_mailbox))
        for subscription in live:
            provider, ref = subscription.provider, subscription.provider_ref
            transaction.on_commit(lambda provider=provider, ref=ref: _provider_quietly(
                provider, "subscription_cancel", ref, at_period_end=False))
        Subscription.objects.filter(pk__in=[row.pk for row in live]).update(status=Subscription.Status.CANCELED)
        partner_mailbox_delete(partner_mailbox=partner_mailbox)


def payg_abandoned_sweep() -> int:
    """Mailboxes still unpaid 7 days after creation are deleted with their accounts."""
    done = 0
    stale = PartnerMailbox.objects.filter(status=PartnerMailbox.Status.PENDING_PAYMENT,
                                          created_at__lte=timezone.now() - PENDING_LIFETIME)
    for partner_mailbox in stale.select_related("partner__account", "mailbox__domain"):
        with transaction.atomic():
            locked = PartnerMailbox.objects.select_for_update().filter(
                pk=partner_mailbox.pk, status=PartnerMailbox.Status.PENDING_PAYMENT).first()
            if locked is None:
                continue
            _expire_checkouts(locked)
            data = partner_mailbox_purge(partner_mailbox=locked)
            emit(account=partner_mailbox.partner.account, name="partner_mailbox.payment_abandoned",
                 data={**data, "status": "deleted"})
            done += 1
    return done


# management


def _payg(partner_mailbox: PartnerMailbox) -> PartnerMailbox:
    if partner_mailbox.funding_mode != PartnerMailbox.Funding.PAY_AS_YOU_GO:
        raise NotPayAsYouGo("this mailbox is funded by a slot, not pay-as-you-go")
    return partner_mailbox


def _live_subscriptions(partner_mailbox: PartnerMailbox):
    return Subscription.objects.filter(partner_mailbox=partner_mailbox, status__in=[
        Subscription.Status.ACTIVE, Subscription.Status.PAST_DUE])


def payg_subscription(*, partner_mailbox: PartnerMailbox) -> dict:
    """The spec's subscription record (before the first payment: the pending offer)."""
    _payg(partner_mailbox)
    subscription = partner_mailbox.subscriptions.order_by("-created_at").first()
    currency = partner_mailbox.partner.billing_currency
    if subscription is None:
        purchase = open_checkout(partner_mailbox)
        total = Money(int(purchase.amount_minor), purchase.currency) if purchase else _retail(
            partner_mailbox.partner, partner_mailbox.plan_type)
        return {"mailbox_id": partner_mailbox.pk, "plan_type": partner_mailbox.plan_type, "billing_cycle": "monthly",
                "status": "pending_payment", "currency": total.currency, "total_price": total,
                "current_period_start": None, "current_period_end": None, "next_billing_date": None,
                "auto_renew": True, "payment_provider": purchase.provider if purchase else currency}
    running = subscription.status != Subscription.Status.CANCELED
    return {"mailbox_id": partner_mailbox.pk, "plan_type": subscription.plan_code, "billing_cycle": "monthly",
            "status": subscription.status, "currency": subscription.currency,
            "total_price": Money(int(subscription.amount_minor), subscription.currency),
            "current_period_start": subscription.current_period_start.date(),
            "current_period_end": subscription.current_period_end.date(),
            "next_billing_date": subscription.current_period_end.date()
            if running and not subscription.cancel_at_period_end else None,
            "auto_renew": running and not subscription.cancel_at_period_end,
            "payment_provider": subscription.provider}


def _running(partner_mailbox: PartnerMailbox) -> Subscription:
    subscription = _live_subscriptions(_payg(partner_mailbox)).first()
    if subscription is None:
        raise NotAllowedNow(f"the mailbox has no running subscription (it is {partner_mailbox.status})")
    return subscription


def payg_cancel(*, partner_mailbox: PartnerMailbox, immediate: bool = False) -> None:
    """Ask the provider to end the subscription now or at the period end; the mailbox turns
    expired when the provider confirms."""
    subscription = _running(partner_mailbox)
    provider_named(subscription.provider).subscription_cancel(subscription.provider_ref, at_period_end=not immediate)


def payg_upgrade(*, partner_mailbox: PartnerMailbox, new_plan_type: str) -> None:
    """Change the subscription's plan at the provider (prorated there); the plan and its storage
    quota apply when the provider confirms."""
    if new_plan_type not in PLANS:
        raise InvalidFields({"new_plan_type": ["pro or premium"]})
    subscription = _running(partner_mailbox)
    if new_plan_type == subscription.plan_code:
        raise NotAllowedNow(f"the mailbox is already on the {new_plan_type} plan")
    retail = _retail(partner_mailbox.partner, new_plan_type)
    if retail.currency != subscription.currency:
        raise NotAllowedNow("the subscription's currency differs from the partner's current retail prices")
    provider_named(subscription.provider).subscription_change(
        subscription.provider_ref, product=f"mailbox:{new_plan_type}", unit_amount_minor=retail.minor,
        description=f"{partner_mailbox.mailbox.address}: {new_plan_type.title()} mailbox, monthly")


def payg_addon_purchase(*, partner_mailbox: PartnerMailbox, type: str, quantity: int, return_url: str) -> Purchase:
    """extra_storage: `quantity` GB more for this mailbox (one-off, the price table's storage
    price). extra_mailbox: `quantity` prepaid slots of this mailbox's plan, one month each, at the
    partner's retail price (the customer pays for more mailboxes; the partner creates them)."""
    _payg(partner_mailbox)
    if type not in ADDON_TYPES:
        raise InvalidFields({"type": ["extra_mailbox or extra_storage"]})
    if not isinstance(quantity, int) or isinstance(quantity, bool) or not 1 <= quantity <= 100:
        raise InvalidFields({"quantity": ["a whole number from 1 to 100"]})
    if partner_mailbox.status in (PartnerMailbox.Status.PENDING_PAYMENT, PartnerMailbox.Status.EXPIRED):
        raise NotAllowedNow(f"add-ons need a paid mailbox; this one is {partner_mailbox.status}")
    partner = partner_mailbox.partner
    currency = partner.billing_currency
    address = partner_mailbox.mailbox.address
    if type == "extra_storage":
        unit = price("storage_gb", currency)
        return purchase_start(account=partner.account, kind=Purchase.Kind.MAILBOX_STORAGE, item="storage_gb",
                              price_item="storage_gb", unit=unit, quantity=quantity, currency=currency,
                              return_url=return_url, partner_mailbox=partner_mailbox,
                              wholesale_minor=unit.minor * quantity,
                              description=f"{address}: {quantity} GB extra storage")
    plan = partner_mailbox.plan_type
    return purchase_start(account=partner.account, kind=Purchase.Kind.MAILBOX_EXTRA, item=plan,
                          price_item=f"mailbox:{plan}", unit=_retail(partner, plan), quantity=quantity,
                          currency=currency, return_url=return_url, partner_mailbox=partner_mailbox,
                          wholesale_minor=wholesale_monthly(plan, currency).minor * quantity,
                          description=f"{address}: {quantity} extra {plan.title()} mailbox"
                          f"{'es' if quantity != 1 else ''}, one month each")


# effects of verified provider events (called by billing.services.events)


def _data(partner_mailbox: PartnerMailbox, **extra) -> dict:
    return {**partner_mailbox_event_data(partner_mailbox), **extra}


def _money_data(payment: Payment) -> dict:
    return {"amount": Money(int(payment.amount_minor), payment.currency).as_number(), "currency": payment.currency}


def mailbox_first_payment(purchase: Purchase, state, payment: Payment) -> None:
    partner_mailbox = (PartnerMailbox.objects.select_for_update().filter(pk=purchase.partner_mailbox_id).first()
                       if purchase.partner_mailbox_id else None)
    if partner_mailbox is None or partner_mailbox.status != PartnerMailbox.Status.PENDING_PAYMENT:
        log.warning("payment %s for a mailbox no longer waiting for it: refunded", payment.provider_ref)
        transaction.on_commit(lambda: _provider_quietly(purchase.provider, "refund", payment.provider_ref))
        if state.subscription_ref:
            transaction.on_commit(lambda: _provider_quietly(purchase.provider, "subscription_cancel",
                                                            state.subscription_ref, at_period_end=False))
        return
    start = state.period_start or timezone.now()
    end = state.period_end or start + timedelta(days=30)
    Subscription.objects.update_or_create(
        provider=purchase.provider, provider_ref=state.subscription_ref or purchase.provider_ref,
        defaults={"account": purchase.account, "purchase": purchase, "plan_code": purchase.item,
                  "partner_mailbox": partner_mailbox, "amount_minor": purchase.amount_minor,
                  "wholesale_minor": purchase.wholesale_minor, "currency": purchase.currency,
                  "status": Subscription.Status.ACTIVE, "current_period_start": start, "current_period_end": end})
    partner_mailbox_set_state(partner_mailbox=partner_mailbox, status=PartnerMailbox.Status.ACTIVE, enabled=True,
                              expires_at=end)
    _expire_checkouts(partner_mailbox)  # another still open (a retry made meanwhile) takes no second payment
    margin_credit(partner=partner_mailbox.partner, payment=payment, wholesale_minor=purchase.wholesale_minor)
    emit(account=purchase.account, name="partner_mailbox.payment_confirmed",
         data=_data(partner_mailbox, **_money_data(payment), period_end=iso(end), first_payment=True))


def mailbox_addon_bought(purchase: Purchase, state, payment: Payment) -> None:
    partner_mailbox = purchase.partner_mailbox
    partner = HostingPartner.objects.get(account=purchase.account)
    if purchase.kind == Purchase.Kind.MAILBOX_STORAGE:
        if partner_mailbox is None:  # deleted before the payment cleared: nothing to grant
            log.warning("storage paid for a deleted mailbox (%s): refunded", purchase.reference)
            transaction.on_commit(lambda: _provider_quietly(purchase.provider, "refund", payment.provider_ref))
            return
        Mailbox.objects.filter(pk=partner_mailbox.mailbox_id).update(
            extra_storage_mb=F("extra_storage_mb") + purchase.quantity * STORAGE_GB_PER_UNIT * 1024)
    elif purchase.kind == Purchase.Kind.MAILBOX_EXTRA:
        slots_grant(partner=partner, count=purchase.quantity, plan_type=purchase.item)
    margin_credit(partner=partner, payment=payment, wholesale_minor=purchase.wholesale_minor)


def mailbox_renewal_paid(subscription: Subscription, payment: Payment) -> None:
    partner_mailbox = PartnerMailbox.objects.select_for_update().filter(pk=subscription.partner_mailbox_id).first()
    if partner_mailbox is None:
        return
    partner_mailbox_set_state(partner_mailbox=partner_mailbox, status=PartnerMailbox.Status.ACTIVE, enabled=True,
                              expires_at=subscription.current_period_end)
    margin_credit(partner=partner_mailbox.partner, payment=payment, wholesale_minor=subscription.wholesale_minor)
    emit(account=subscription.account, name="partner_mailbox.payment_confirmed",
         data=_data(partner_mailbox, **_money_data(payment), period_end=iso(subscription.current_period_end),
                    first_payment=False))


def mailbox_renewal_failed(subscription: Subscription) -> None:
    partner_mailbox = PartnerMailbox.objects.select_for_update().filter(pk=subscription.partner_mailbox_id).first()
    if partner_mailbox is None or partner_mailbox.status != PartnerMailbox.Status.ACTIVE:
        return
    partner_mailbox_set_state(partner_mailbox=partner_mailbox, status=PartnerMailbox.Status.SUSPENDED, enabled=False)
    emit(account=subscription.account, name="partner_mailbox.payment_failed",
         data=_data(partner_mailbox, amount=Money(int(subscription.amount_minor), subscription.currency).as_number(),
                    currency=subscription.currency, period_end=iso(subscription.current_period_end)))


def mailbox_plan_changed(subscription: Subscription, plan_type: str) -> None:
    partner_mailbox = PartnerMailbox.objects.select_for_update().filter(pk=subscription.partner_mailbox_id).first()
    if partner_mailbox is not None:
        partner_mailbox_set_state(partner_mailbox=partner_mailbox, status=partner_mailbox.status,
                                  enabled=partner_mailbox.mailbox.is_active, plan_type=plan_type)
        subscription.wholesale_minor = wholesale_monthly(plan_type, subscription.currency).minor


def mailbox_canceled(subscription: Subscription) -> None:
    partner_mailbox = PartnerMailbox.objects.select_for_update().filter(pk=subscription.partner_mailbox_id).first()
    if partner_mailbox is None or partner_mailbox.status == PartnerMailbox.Status.EXPIRED:
        return
    partner_mailbox_set_state(partner_mailbox=partner_mailbox, status=PartnerMailbox.Status.EXPIRED, enabled=False)
    emit(account=subscription.account, name="partner_mailbox.expired",
         data=_data(partner_mailbox, period_end=iso(subscription.current_period_end)))
