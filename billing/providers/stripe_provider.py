"""Stripe (USD): a Checkout Session takes the first payment, Stripe Billing renews monthly plans, and
signed webhooks (`Stripe-Signature`) report what happened.

Every call goes through one `stripe.StripeClient` pointed at STRIPE_API_BASE (a loopback server in
tests, testkit/stripe_server.py). Events about checkouts and subscriptions are answered with the
object's current state, re-fetched from Stripe, so an event that arrives late never rolls anything
back. Plan changes use `create_prorations`: the difference is charged on the next renewal invoice,
which arrives as an ordinary renewal. Objects of both API shapes are read: periods on the
subscription items (2025 and later) or on the subscription, `invoice.parent` or `invoice.subscription`.
"""
import logging
import re
from contextlib import contextmanager
from datetime import UTC, datetime

import stripe
from django.conf import settings

from billing.models import BillingCustomer, Price
from billing.providers.base import (
    Buyer,
    Checkout,
    CheckoutRequest,
    CheckoutState,
    EventKind,
    ProviderEvent,
    ProviderRefused,
    ProviderUnavailable,
    SignatureInvalid,
    SubscriptionState,
)

log = logging.getLogger(__name__)

NAME = "stripe"
SIGNATURE_HEADER = "Stripe-Signature"
ENDED = ("canceled", "incomplete_expired")
FAILING = ("past_due", "unpaid")
CHECKOUT_EVENTS = ("checkout.session.completed", "checkout.session.async_payment_succeeded",
                   "checkout.session.async_payment_failed", "checkout.session.expired")
RENEWAL_EVENTS = ("invoice.paid", "invoice.payment_succeeded", "invoice.payment_failed")
SUBSCRIPTION_EVENTS = ("customer.subscription.updated", "customer.subscription.deleted")
SUBSCRIPTION_EXPAND = ["items.data.price.product", "latest_invoice"]
# items sold at a partner's retail price rather than from the price table (pay-as-you-go mailboxes)
ITEM_LABELS = {"mailbox:pro": "Pro mailbox (per month)", "mailbox:premium": "Premium mailbox (per month)"}


@contextmanager
def _calling(undone: str = "nothing was charged"):
    """Stripe's errors as ours: no answer or a 5xx is ProviderUnavailable, a refusal ProviderRefused."""
    try:
        yield
    except stripe.StripeError as exc:
        if isinstance(exc, (stripe.APIConnectionError, stripe.RateLimitError)) or (exc.http_status or 500) >= 500:
            log.warning("Stripe did not answer: %s", exc)
            raise ProviderUnavailable(
                f"The payment provider (Stripe) did not answer; {undone}. Try again in a minute.") from exc
        log.error("Stripe refused a request (%s): %s", exc.http_status, exc)
        raise ProviderRefused(f"The payment provider (Stripe) refused the request; {undone}.") from exc


def _id(value) -> str:
    """An expandable field's id, whether it came expanded or not."""
    if isinstance(value, dict):
        return value.get("id") or ""
    return value or ""


def _time(value) -> datetime | None:
    return datetime.fromtimestamp(value, tz=UTC) if value else None


def _period(subscription) -> tuple[datetime | None, datetime | None]:
    """The current period: on the subscription items since API 2025-03-31, on the subscription before."""
    if not isinstance(subscription, dict):
        return None, None
    items = (subscription.get("items") or {}).get("data") or [{}]
    start = items[0].get("current_period_start") or subscription.get("current_period_start")
    end = items[0].get("current_period_end") or subscription.get("current_period_end")
    return _time(start), _time(end)


def _invoice_subscription(invoice: dict) -> tuple[str, dict]:
    """The subscription an invoice bills and that subscription's metadata when invoiced."""
    details = ((invoice.get("parent") or {}).get("subscription_details")) or {}
    if details:
        return _id(details.get("subscription")), details.get("metadata") or {}
    return _id(invoice.get("subscription")), (invoice.get("subscription_details") or {}).get("metadata") or {}


def _product_id(item: str) -> str:
    """One Stripe product per catalogue item, under an id of ours: `plan:pro` is `mw_plan_pro`."""
    return "mw_" + re.sub(r"[^a-z0-9]+", "_", item.lower()).strip("_")


class StripeProvider:
    name = NAME

    def __init__(self):
        self._client: stripe.StripeClient | None = None

    @property
    def client(self) -> stripe.StripeClient:
        if self._client is None:
            self._client = stripe.StripeClient(
                api_key=settings.STRIPE_API_KEY, base_addresses={"api": settings.STRIPE_API_BASE},
                max_network_retries=1, http_client=stripe.RequestsClient(timeout=(5, 30)))
        return self._client

    # checkouts

    def checkout_create(self, request: CheckoutRequest) -> Checkout:
        metadata = {"reference": request.reference, **request.metadata}
        return_url = request.return_url_with_reference if request.return_url else settings.PUBLIC_BASE_URL
        with _calling():
            price_data = {"currency": request.currency, "unit_amount": request.unit_amount_minor,
                          "product": self._product(request.product)}
            params = {"customer": self._customer(request.buyer), "client_reference_id": request.reference,
                      "metadata": metadata, "success_url": return_url, "cancel_url": return_url,
                      "line_items": [{"price_data": price_data, "quantity": request.quantity}]}
            if request.recurring:
                price_data["recurring"] = {"interval": "month"}
                params.update(mode="subscription", subscription_data={
                    "description": request.description, "metadata": {**metadata, "product": request.product}})
            else:
                params.update(mode="payment", payment_intent_data={"description": request.description,
                                                                   "metadata": metadata})
            session = self.client.v1.checkout.sessions.create(
                params, {"idempotency_key": f"checkout:{request.reference}"})
        return Checkout(provider_ref=session.id, checkout_url=session.url)

    def _customer(self, buyer: Buyer) -> str:
        """The account's Stripe customer, created on its first checkout."""
        known = BillingCustomer.objects.filter(account_id=buyer.account_id, provider=NAME).first()
        if known is not None:
            return known.external_id
        customer = self.client.v1.customers.create({
            "email": buyer.email or None, "name": buyer.name, "metadata": {"account_id": str(buyer.account_id)}})
        record, _created = BillingCustomer.objects.get_or_create(
            account_id=buyer.account_id, provider=NAME, defaults={"external_id": customer.id})
        return record.external_id

    def _product(self, item: str) -> str:
        product_id = _product_id(item)
        try:
            self.client.v1.products.retrieve(product_id)
        except stripe.InvalidRequestError as exc:
            if exc.code != "resource_missing":
                raise
            try:
                label = Price.Item(item).label if item in Price.Item.values else ITEM_LABELS.get(item, item)
                self.client.v1.products.create({"id": product_id, "name": f"Mailwell: {label}",
                                                "metadata": {"item": item}})
            except stripe.InvalidRequestError as again:  # created meanwhile by a concurrent checkout
                if again.code != "resource_already_exists":
                    raise
        return product_id

    def checkout_state(self, provider_ref: str) -> CheckoutState:
        with _calling("nothing changed"):
            return _checkout_state(self._session(provider_ref))

    def checkout_expire(self, provider_ref: str) -> None:
        """Expire the session if it is still open, so its page takes no payment. One paid meanwhile
        is left as it is (or, paid between the two calls, refused by Stripe: ProviderRefused); its
        event then refunds the payment."""
        with _calling("nothing changed"):
            if self.client.v1.checkout.sessions.retrieve(provider_ref).status == "open":
                self.client.v1.checkout.sessions.expire(provider_ref)

    def _session(self, session_id: str) -> dict:
        return self.client.v1.checkout.sessions.retrieve(
            session_id, {"expand": ["subscription", "invoice"]}).to_dict()

    # webhooks

    def webhook_parse(self, body: bytes, headers) -> ProviderEvent:
        try:
            event = stripe.Webhook.construct_event(body, headers.get(SIGNATURE_HEADER),
                                                   settings.STRIPE_WEBHOOK_SECRET).to_dict()
            kind, obj = event["type"], event["data"]["object"]
            fields = {"provider": NAME, "event_id": str(event["id"]), "payload": event}
        except (stripe.SignatureVerificationError, ValueError, KeyError, TypeError) as exc:
            raise SignatureInvalid(str(exc) or type(exc).__name__) from None
        with _calling("nothing changed"):
            if kind in CHECKOUT_EVENTS:
                return self._checkout_event(kind, obj, fields)
            if kind in RENEWAL_EVENTS:
                return self._invoice_event(kind, obj, fields)
            if kind in SUBSCRIPTION_EVENTS:
                return self._subscription_event(kind, obj, fields)
            if kind == "charge.refunded":
                return self._refund_event(obj, fields)
        return ProviderEvent(kind=EventKind.IGNORED, **fields)

    def _checkout_event(self, kind: str, obj: dict, fields: dict) -> ProviderEvent:
        session = self._session(obj["id"])
        state = _checkout_state(session)
        if state.status == "paid":
            normalised = EventKind.CHECKOUT_PAID
        elif state.status == "expired":
            normalised = EventKind.CHECKOUT_EXPIRED
        elif kind == "checkout.session.async_payment_failed":
            normalised = EventKind.CHECKOUT_FAILED
        else:  # completed, but a delayed payment method has not paid yet
            normalised = EventKind.IGNORED
        return ProviderEvent(
            kind=normalised, reference=session.get("client_reference_id") or session["metadata"].get("reference", ""),
            provider_ref=session["id"], subscription_ref=state.subscription_ref, payment_ref=state.payment_ref,
            amount_minor=state.amount_minor, currency=state.currency, period_start=state.period_start,
            period_end=state.period_end, **fields)

    def _invoice_event(self, kind: str, invoice: dict, fields: dict) -> ProviderEvent:
        subscription_ref, metadata = _invoice_subscription(invoice)
        common = {"subscription_ref": subscription_ref, "reference": metadata.get("reference", ""),
                  "payment_ref": invoice["id"], "currency": invoice.get("currency", "")}
        if not subscription_ref:
            return ProviderEvent(kind=EventKind.IGNORED, **fields)
        if kind == "invoice.payment_failed":
            # only while the subscription still fails now: a late failure after a retry paid changes nothing
            subscription = self.client.v1.subscriptions.retrieve(subscription_ref).to_dict()
            failing = subscription["status"] in FAILING
            return ProviderEvent(kind=EventKind.RENEWAL_FAILED if failing else EventKind.IGNORED,
                                 amount_minor=invoice.get("amount_due"), **common, **fields)
        if invoice.get("billing_reason") != "subscription_cycle":  # the first invoice is the checkout's
            return ProviderEvent(kind=EventKind.IGNORED, **common, **fields)
        lines = [line for line in (invoice.get("lines") or {}).get("data", []) if line.get("period")]
        period = max((line["period"] for line in lines), key=lambda period: period["end"], default={})
        return ProviderEvent(kind=EventKind.RENEWAL_PAID, amount_minor=invoice.get("amount_paid"),
                             period_start=_time(period.get("start")), period_end=_time(period.get("end")),
                             **common, **fields)

    def _subscription_event(self, kind: str, obj: dict, fields: dict) -> ProviderEvent:
        try:
            subscription = self._subscription(obj["id"])
        except stripe.InvalidRequestError as exc:
            if exc.code != "resource_missing" or kind != "customer.subscription.deleted":
                raise
            subscription = obj  # deleted test data: the event is all there is
        state = _subscription_state(subscription)
        ended = kind == "customer.subscription.deleted" or state.status in ENDED
        return ProviderEvent(
            kind=EventKind.SUBSCRIPTION_CANCELED if ended else EventKind.SUBSCRIPTION_UPDATED,
            reference=(subscription.get("metadata") or {}).get("reference", ""), subscription_ref=subscription["id"],
            period_start=state.period_start, period_end=state.period_end, product=state.product,
            unit_amount_minor=state.unit_amount_minor, currency=state.currency,
            cancel_at_period_end=state.cancel_at_period_end, **fields)

    def _refund_event(self, charge: dict, fields: dict) -> ProviderEvent:
        if not charge.get("refunded"):  # a partial refund: the payment stays, and so does what it bought
            return ProviderEvent(kind=EventKind.IGNORED, **fields)
        intent = _id(charge.get("payment_intent"))
        return ProviderEvent(kind=EventKind.REFUNDED, payment_ref=self._payment_ref(charge, intent),
                             amount_minor=charge.get("amount_refunded"), currency=charge.get("currency", ""),
                             **fields)

    def _payment_ref(self, charge: dict, intent: str) -> str:
        """What checkout_state called this payment: the invoice for a subscription, else the intent."""
        if _id(charge.get("invoice")):
            return _id(charge["invoice"])
        if intent:
            rows = self.client.v1.invoice_payments.list(
                {"payment": {"type": "payment_intent", "payment_intent": intent}, "limit": 1}).data
            if rows:
                return _id(rows[0].invoice)
        return intent

    # subscriptions

    def _subscription(self, subscription_ref: str) -> dict:
        return self.client.v1.subscriptions.retrieve(subscription_ref, {"expand": SUBSCRIPTION_EXPAND}).to_dict()

    def subscription_state(self, subscription_ref: str) -> SubscriptionState:
        with _calling("nothing changed"):
            return _subscription_state(self._subscription(subscription_ref))

    def subscription_cancel(self, subscription_ref: str, *, at_period_end: bool = True) -> None:
        with _calling("nothing changed"):
            if at_period_end:
                self.client.v1.subscriptions.update(subscription_ref, {"cancel_at_period_end": True})
            else:
                self.client.v1.subscriptions.cancel(subscription_ref)

    def subscription_change(self, subscription_ref: str, *, product: str, unit_amount_minor: int,
                            description: str) -> None:
        """Move the subscription's one item to `product` at a new monthly price, from now; the
        difference for the rest of the period is added to the next renewal (create_prorations)."""
        with _calling("nothing changed"):
            item = self.client.v1.subscriptions.retrieve(subscription_ref).to_dict()["items"]["data"][0]
            self.client.v1.subscriptions.update(subscription_ref, {
                "items": [{"id": item["id"], "price_data": {
                    "currency": item["price"]["currency"], "product": self._product(product),
                    "unit_amount": unit_amount_minor, "recurring": {"interval": "month"}}}],
                "proration_behavior": "create_prorations", "cancel_at_period_end": False,
                "description": description, "metadata": {"product": product}})

    def refund(self, payment_ref: str, *, amount_minor: int | None = None) -> None:
        """Refund a payment named as checkout_state named it: an invoice (subscriptions) or an intent."""
        with _calling("nothing was refunded"):
            intent = self._invoice_intent(payment_ref) if payment_ref.startswith("in_") else payment_ref
            params = {"payment_intent": intent}
            if amount_minor is not None:
                params["amount"] = amount_minor
            self.client.v1.refunds.create(params, {"idempotency_key": f"refund:{payment_ref}:{amount_minor}"})

    def _invoice_intent(self, invoice_id: str) -> str:
        invoice = self.client.v1.invoices.retrieve(invoice_id, {"expand": ["payments"]}).to_dict()
        for row in (invoice.get("payments") or {}).get("data", []):
            if row.get("status") == "paid" and row["payment"].get("type") == "payment_intent":
                return _id(row["payment"]["payment_intent"])
        if _id(invoice.get("payment_intent")):
            return _id(invoice["payment_intent"])
        raise ProviderRefused(f"Stripe has no payment for invoice {invoice_id} to refund.")


def _checkout_state(session: dict) -> CheckoutState:
    paid = session["payment_status"] == "paid" or (
        session["status"] == "complete" and session["payment_status"] == "no_payment_required")
    status = "paid" if paid else "expired" if session["status"] == "expired" else "open"
    subscription = session.get("subscription")
    if session.get("mode") == "subscription":
        payment_ref = _id(session.get("invoice")) or _id((subscription or {}).get("latest_invoice")
                                                         if isinstance(subscription, dict) else "")
    else:
        payment_ref = _id(session.get("payment_intent"))
    start, end = _period(subscription)
    return CheckoutState(status=status, subscription_ref=_id(subscription), payment_ref=payment_ref if paid else "",
                         amount_minor=session.get("amount_total"), currency=session.get("currency") or "",
                         period_start=start, period_end=end)


def _subscription_state(subscription: dict) -> SubscriptionState:
    items = (subscription.get("items") or {}).get("data") or [{}]
    price = items[0].get("price") or {}
    product = price.get("product")
    item = ((product.get("metadata") or {}).get("item", "") if isinstance(product, dict) else "") or (
        (subscription.get("metadata") or {}).get("product", ""))
    invoice = subscription.get("latest_invoice")
    invoice = invoice if isinstance(invoice, dict) else {"id": invoice or ""}
    start, end = _period(subscription)
    return SubscriptionState(
        status=subscription["status"], period_start=start, period_end=end, product=item,
        unit_amount_minor=price.get("unit_amount"), currency=price.get("currency") or subscription.get("currency", ""),
        cancel_at_period_end=bool(subscription.get("cancel_at_period_end")), latest_invoice=invoice["id"],
        latest_invoice_paid=invoice.get("status") == "paid", latest_invoice_reason=invoice.get("billing_reason", ""),
        latest_amount_paid=invoice.get("amount_paid"))
