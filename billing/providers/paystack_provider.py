"""Paystack (NGN; card and bank transfer): a thin httpx client over its REST API, and its signed webhooks.

Transactions are initialised with our purchase reference as Paystack's reference, so a checkout's
provider_ref is our reference. Monthly plans subscribe through a Paystack plan per (item, amount),
found or created on the first checkout; Paystack then creates the subscription and charges renewals
itself. Every event that would grant or take money is re-checked with the API (the transaction as
Paystack has it now is the truth), so a late, replayed or spoofed event cannot grant what was not
paid. Paystack's events carry no id: see `_event_id`.
"""
import functools
import hashlib
import hmac
import json
import logging
from datetime import datetime, timedelta
from urllib.parse import quote

import httpx
from django.conf import settings
from django.utils import timezone

from billing.providers.base import (
    Checkout,
    CheckoutRequest,
    CheckoutState,
    EventKind,
    ProviderEvent,
    ProviderCannot,
    ProviderRefused,
    ProviderUnavailable,
    SignatureInvalid,
)

log = logging.getLogger(__name__)

NAME = "paystack"
SIGNATURE_HEADER = "x-paystack-signature"
TIMEOUT_SECONDS = 15
# Paystack keeps an initialised, unpaid transaction "abandoned" while the buyer may still be on its
# page (and lets them pay it later); only this long after it was opened do we call the checkout expired.
ABANDONED_AFTER = timedelta(hours=24)
LIVE_SUBSCRIPTION = ("active", "non-renewing", "attention")


@functools.cache
def _http() -> httpx.Client:
    """One pooled client per process: building its TLS context costs more than a call to Paystack."""
    return httpx.Client(timeout=TIMEOUT_SECONDS)


def _time(value) -> datetime | None:
    """Paystack's ISO 8601 times, `2026-11-23T12:00:00.000Z`."""
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")) if value else None
    except ValueError:
        return None


def _metadata(transaction: dict) -> dict:
    """A transaction's metadata: an object, a JSON string, or "" when none was sent."""
    metadata = transaction.get("metadata")
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except ValueError:
            return {}
    return metadata if isinstance(metadata, dict) else {}


def _event_id(name: str, subject, status) -> str:
    """Paystack events carry no id, so ours is the event, what it is about (transaction, invoice,
    subscription or refund) and the state Paystack reports for it: a redelivery or replay of the
    same event maps to the same id and is applied once, while a later, different state of the same
    thing (an abandoned transaction paid after all) is a new event."""
    return f"{name}:{subject}:{status or ''}"[:128]


def _subject(data: dict) -> str:
    for key in ("id", "invoice_code", "subscription_code", "reference", "transaction_reference"):
        if data.get(key):
            return str(data[key])
    return ""


class PaystackProvider:
    name = NAME

    def __init__(self):
        self.secret_key = settings.PAYSTACK_SECRET_KEY
        self.api_base = settings.PAYSTACK_API_BASE.rstrip("/")

    def _call(self, method: str, path: str, *, body: dict | None = None, params: dict | None = None,
              undone: str = "nothing was charged"):
        """One API call; returns the answer's `data`. No answer or a 5xx is ProviderUnavailable,
        `{"status": false}` (bad key, unsupported currency, unknown reference) ProviderRefused."""
        down = f"The payment provider (Paystack) did not answer; {undone}. Try again in a minute."
        try:
            response = _http().request(method, self.api_base + path, json=body, params=params,
                                       headers={"Authorization": f"Bearer {self.secret_key}"})
        except httpx.TransportError as exc:  # refused, dropped, or timed out
            log.warning("Paystack did not answer %s %s: %r", method, path, exc)
            raise ProviderUnavailable(down) from exc
        try:
            answer = response.json() if response.status_code < 500 else None
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            log.warning("Paystack answered %s %s with %s", method, path, response.status_code)
            raise ProviderUnavailable(down)
        if response.is_error or not answer.get("status"):
            log.error("Paystack refused %s %s (%s): %s", method, path, response.status_code, answer.get("message"))
            raise ProviderRefused(f"The payment provider (Paystack) refused the request: "
                                  f"{answer.get('message') or response.status_code}; {undone}.")
        return answer.get("data")

    # checkouts

    def checkout_create(self, request: CheckoutRequest) -> Checkout:
        fields = {"email": request.buyer.email, "amount": request.amount_minor, "currency": request.currency.upper(),
                  "reference": request.reference, "channels": [request.payment_method],
                  "metadata": {**request.metadata, "reference": request.reference}}
        if request.return_url:
            fields["callback_url"] = request.return_url
        if request.recurring:
            fields["plan"] = self._plan_code(request.product, request.amount_minor, request.currency)
        data = self._call("POST", "/transaction/initialize", body=fields)
        return Checkout(provider_ref=data["reference"], checkout_url=data["authorization_url"])

    def _plan_code(self, product: str, amount_minor: int, currency: str) -> str:
        """The monthly Paystack plan for a catalogue item at an amount, created the first time."""
        name = f"Mailwell {product} {currency.upper()} {amount_minor} monthly"
        plans = self._call("GET", "/plan", params={"amount": amount_minor, "interval": "monthly", "perPage": 100})
        for plan in plans or []:
            if plan.get("name") == name and plan.get("currency") == currency.upper():
                return plan["plan_code"]
        plan = self._call("POST", "/plan", body={"name": name, "amount": amount_minor, "interval": "monthly",
                                                 "currency": currency.upper()})
        return plan["plan_code"]

    def checkout_state(self, provider_ref: str) -> CheckoutState:
        return self._state(self._verify(provider_ref))

    def checkout_expire(self, provider_ref: str) -> None:
        """Nothing to call: Paystack has no way to close an initialised transaction. A payment that
        still completes for a deleted mailbox is refunded when its charge.success arrives
        (billing.services.payg.mailbox_first_payment)."""

    def _verify(self, reference: str) -> dict:
        """The transaction as Paystack has it now."""
        return self._call("GET", f"/transaction/verify/{quote(str(reference), safe='')}", undone="nothing changed")

    def _state(self, transaction: dict) -> CheckoutState:
        status = transaction.get("status")
        if status in ("failed", "reversed"):
            return CheckoutState(status="failed")
        if status == "abandoned":
            opened = _time(transaction.get("created_at") or transaction.get("createdAt"))
            old = opened is not None and opened + ABANDONED_AFTER < timezone.now()
            return CheckoutState(status="expired" if old else "open")
        if status != "success":  # ongoing (a bank transfer not landed yet), pending, processing, queued
            return CheckoutState(status="open")
        paid = {"payment_ref": str(transaction["id"]), "amount_minor": int(transaction["amount"]),
                "currency": str(transaction["currency"]).lower()}
        if not self._plan(transaction):
            return CheckoutState(status="paid", **paid)
        subscription = self._subscription_of(transaction)
        if subscription is None:  # paid, but Paystack has not created the subscription yet
            return CheckoutState(status="open")
        return CheckoutState(status="paid", subscription_ref=subscription["subscription_code"],
                             period_start=_time(transaction.get("paid_at") or transaction.get("paidAt")),
                             period_end=_time(subscription.get("next_payment_date")), **paid)

    def _plan(self, transaction: dict) -> dict:
        """The transaction's plan ({} for none): verify answers `plan_object` (and `plan` as a code),
        webhooks a `plan` object."""
        for value in (transaction.get("plan_object"), transaction.get("plan")):
            if isinstance(value, dict) and value.get("plan_code"):
                return value
        code = transaction.get("plan")
        if isinstance(code, str) and code:
            return self._call("GET", f"/plan/{quote(code, safe='')}", undone="nothing changed")
        return {}

    def _subscription_of(self, transaction: dict) -> dict | None:
        """The live subscription Paystack made for the transaction's customer and plan (the newest)."""
        customer, plan = (transaction.get("customer") or {}).get("id"), self._plan(transaction).get("id")
        if not (customer and plan):
            return None
        found = self._call("GET", "/subscription", params={"customer": customer, "plan": plan, "perPage": 100},
                           undone="nothing changed")
        live = [row for row in found or [] if row.get("status") in LIVE_SUBSCRIPTION]
        return max(live, key=lambda row: row.get("id") or 0, default=None)

    # webhooks

    def webhook_parse(self, body: bytes, headers) -> ProviderEvent:
        signature = headers.get(SIGNATURE_HEADER)
        if not signature:
            raise SignatureInvalid(f"missing {SIGNATURE_HEADER} header")
        expected = hmac.new(self.secret_key.encode(), body, hashlib.sha512).hexdigest()
        if not hmac.compare_digest(expected.encode(), signature.strip().lower().encode()):
            raise SignatureInvalid("signature does not match")
        try:
            envelope = json.loads(body)
            name, data = str(envelope["event"]), envelope["data"]
            handler = {
                "charge.success": self._charge_event,
                "invoice.create": self._invoice_event,
                "invoice.update": self._invoice_event,
                "invoice.payment_failed": self._invoice_event,
                "subscription.disable": self._subscription_event,
                "subscription.not_renew": self._subscription_event,
                "refund.processed": self._refund_event,
            }.get(name)
            fields = handler(name, data) if handler else None
            fields = fields or {"kind": EventKind.IGNORED, "event_id": _event_id(name, _subject(data),
                                                                                 data.get("status"))}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise SignatureInvalid(f"unreadable event: {exc!r}") from None
        return ProviderEvent(provider=NAME, payload=envelope, **fields)

    def _charge_event(self, name: str, data: dict) -> dict | None:
        """A charge: the first payment of one of our checkouts, or a renewal Paystack charged itself."""
        transaction = self._verify(data["reference"])
        event_id = _event_id(name, transaction["id"], transaction.get("status"))
        if transaction.get("status") != "success":  # not paid at Paystack, whatever the event says
            return {"kind": EventKind.IGNORED, "event_id": event_id}
        if _metadata(transaction).get("reference") == transaction["reference"]:  # one we initialised
            state = self._state(transaction)
            if state.status != "paid":
                # answered 503 (the webhook view), so Paystack delivers it again once the subscription exists
                raise ProviderUnavailable(f"Paystack has not created the subscription for {transaction['reference']}"
                                          " yet; the event will be delivered again.")
            return {"kind": EventKind.CHECKOUT_PAID, "event_id": event_id, "reference": transaction["reference"],
                    "provider_ref": transaction["reference"], "subscription_ref": state.subscription_ref,
                    "payment_ref": state.payment_ref, "amount_minor": state.amount_minor, "currency": state.currency,
                    "period_start": state.period_start, "period_end": state.period_end}
        subscription = self._subscription_of(transaction) if self._plan(transaction) else None
        if subscription is None:  # a payment not made through our checkouts
            return {"kind": EventKind.IGNORED, "event_id": event_id}
        return {"kind": EventKind.RENEWAL_PAID, "event_id": event_id,
                "subscription_ref": subscription["subscription_code"], "payment_ref": str(transaction["id"]),
                "amount_minor": int(transaction["amount"]), "currency": str(transaction["currency"]).lower(),
                "period_start": _time(transaction.get("paid_at") or transaction.get("paidAt")),
                "period_end": _time(subscription.get("next_payment_date"))}

    def _invoice_event(self, name: str, data: dict) -> dict | None:
        """A subscription's invoice: paid (a renewal), or its charge failed (Paystack retries)."""
        subscription_ref = (data.get("subscription") or {}).get("subscription_code")
        if not subscription_ref:
            return None
        if name == "invoice.payment_failed":
            return {"kind": EventKind.RENEWAL_FAILED, "subscription_ref": subscription_ref,
                    "event_id": _event_id(name, _subject(data), data.get("status"))}
        reference = (data.get("transaction") or {}).get("reference")
        if not (data.get("paid") or data.get("status") == "success") or not reference:
            return None  # an invoice raised ahead of its charge
        transaction = self._verify(reference)
        event_id = _event_id(name, _subject(data), transaction.get("status"))
        if transaction.get("status") != "success":
            return {"kind": EventKind.IGNORED, "event_id": event_id}
        return {"kind": EventKind.RENEWAL_PAID, "event_id": event_id, "subscription_ref": subscription_ref,
                "payment_ref": str(transaction["id"]), "amount_minor": int(transaction["amount"]),
                "currency": str(transaction["currency"]).lower(), "period_start": _time(data.get("period_start")),
                "period_end": _time(data.get("period_end"))}

    def _subscription_event(self, name: str, data: dict) -> dict:
        """Disabled: ended (at the end of a non-renewing period, or retries exhausted). Not renewing:
        it runs to its period end, then ends."""
        fields = {"subscription_ref": data["subscription_code"],
                  "event_id": _event_id(name, data["subscription_code"], data.get("status"))}
        if name == "subscription.disable":
            return {"kind": EventKind.SUBSCRIPTION_CANCELED, **fields}
        return {"kind": EventKind.SUBSCRIPTION_UPDATED, "cancel_at_period_end": True, **fields}

    def _refund_event(self, name: str, data: dict) -> dict:
        """A refund went through: the payment is named by its transaction id, as checkout_state named it.
        A partial refund changes nothing: the payment stays, and so does what it bought."""
        transaction = self._verify(data["transaction_reference"])
        event_id = _event_id(name, _subject(data), data.get("status"))
        if int(data["amount"]) < int(transaction["amount"]):
            return {"kind": EventKind.IGNORED, "event_id": event_id}
        return {"kind": EventKind.REFUNDED, "event_id": event_id, "payment_ref": str(transaction["id"]),
                "amount_minor": int(data["amount"]), "currency": str(transaction["currency"]).lower()}

    # subscriptions and refunds

    def subscription_cancel(self, subscription_ref: str, *, at_period_end: bool = True) -> None:
        """Disable it: Paystack charges no more and it ends at its period end (subscription.not_renew
        now, subscription.disable then). Paystack has no way to end a paid period sooner."""
        path = f"/subscription/{quote(subscription_ref, safe='')}"
        subscription = self._call("GET", path, undone="nothing changed")
        if subscription.get("status") not in ("active", "attention"):
            return
        self._call("POST", "/subscription/disable", undone="nothing changed",
                   body={"code": subscription_ref, "token": subscription["email_token"]})

    def subscription_change(self, subscription_ref: str, *, product: str, unit_amount_minor: int,
                            description: str) -> None:
        raise ProviderCannot("Paystack cannot move a running subscription to another plan: switch to Free "
                             "(the plan runs to the end of the paid month), then subscribe to the new plan.")

    def refund(self, payment_ref: str, *, amount_minor: int | None = None) -> None:
        """Refund a transaction (by its id, our payment_ref); all of it unless an amount is given."""
        body = {"transaction": payment_ref}
        if amount_minor is not None:
            body["amount"] = amount_minor
        self._call("POST", "/refund", body=body, undone="nothing was refunded")
