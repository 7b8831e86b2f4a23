"""A small Paystack on loopback for tests: the REST endpoints the paystack provider calls (JSON in,
Paystack's `{status, message, data}` envelope out, Bearer auth), its state in memory, controls that
play the buyer's and Paystack's own side (pay by card, a bank transfer landing, decline, abandon,
renew, fail a renewal, end a subscription, go down), and events signed exactly as Paystack signs
them: `x-paystack-signature` is the hex HMAC-SHA512 of the raw body keyed with the secret key.

Every event Paystack would POST is kept, signed, in `outbox` (oldest first); the controls also
return the events they cause, for the test to deliver to /billing/webhooks/paystack.
"""
import hashlib
import hmac
import itertools
import json
import secrets
import threading
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

PERIOD = timedelta(days=30)
CHANNELS = ("card", "bank", "ussd", "qr", "mobile_money", "bank_transfer", "eft")


@dataclass(frozen=True)
class Delivery:
    """One webhook POST as Paystack makes it: the raw body and its headers."""

    body: bytes
    headers: dict

    @property
    def event(self) -> dict:
        return json.loads(self.body)


class PaystackError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _now() -> datetime:
    return datetime.now(UTC)


class FakePaystack:
    def __init__(self, secret_key: str):
        self.secret_key = secret_key
        self.url = ""
        self.transactions: dict[str, dict] = {}  # by reference
        self.plans: dict[str, dict] = {}  # by plan_code
        self.customers: dict[str, dict] = {}  # by email
        self.subscriptions: dict[str, dict] = {}  # by subscription_code
        self.refunds: list[dict] = []
        self.outbox: list[Delivery] = []
        self.requests: list[tuple[str, str, dict]] = []  # (method, path, JSON body or query) as received
        self.crashes: list[str] = []  # tracebacks of this server's own bugs
        self.failing, self.failing_left = "", 0
        self._ids = itertools.count(4_000_001)
        self._lock = threading.RLock()

    # test controls: the buyer's side and Paystack's

    def down(self, mode: str = "500", *, requests: int = 1000) -> None:
        """The next `requests` requests fail: answered 500, or (`close`) the connection dropped unanswered."""
        self.failing, self.failing_left = mode, requests

    def up(self) -> None:
        self.failing, self.failing_left = "", 0

    def pay(self, reference: str, *, subscription_late: bool = False) -> list[Delivery]:
        """The buyer pays (a card, or the bank transfer landing): charge.success, and for a plan the
        subscription Paystack creates (subscription.create; with `subscription_late`, only when
        `subscription_create` is called)."""
        with self._lock:
            transaction = self.transactions[reference]
            # a declined card is tried again on the same checkout page, as Paystack allows
            assert transaction["status"] in ("abandoned", "ongoing", "failed"), transaction["status"]
            transaction.update(status="success", paid_at=_iso(_now()), gateway_response="Successful",
                               channel=transaction["channel"] or transaction["_channels"][0])
            transaction["authorization"] = self._authorization(transaction["channel"])
            sent = [self._send("charge.success", self._charge_view(transaction))]
            if transaction["_plan"] and not subscription_late:
                sent += self.subscription_create(reference)
            return sent

    def subscription_create(self, reference: str) -> list[Delivery]:
        with self._lock:
            subscription = self._subscribe(self.transactions[reference])
            return [self._send("subscription.create", dict(subscription))]

    def transfer_started(self, reference: str) -> None:
        """The buyer chose bank transfer and was shown the account to pay into: ongoing until it lands."""
        with self._lock:
            self.transactions[reference].update(status="ongoing", channel="bank_transfer",
                                                gateway_response="Awaiting transfer")

    def decline(self, reference: str) -> None:
        """The card is declined (Paystack sends no event for a failed transaction)."""
        with self._lock:
            self.transactions[reference].update(status="failed", gateway_response="Declined")

    def abandon(self, reference: str) -> None:
        """The buyer never came back: still abandoned, two days after it was opened."""
        with self._lock:
            self.transactions[reference]["created_at"] = _iso(_now() - timedelta(days=2))

    def renew(self, subscription_code: str) -> list[Delivery]:
        """Paystack charges the next month: charge.success for a transaction with its own reference,
        then invoice.update for the paid invoice."""
        with self._lock:
            subscription = self.subscriptions[subscription_code]
            transaction = self._renewal(subscription, paid=True)
            start = datetime.fromisoformat(subscription["next_payment_date"])
            subscription.update(status="active", next_payment_date=_iso(start + PERIOD))
            invoice = self._invoice(subscription, transaction, start)
            return [self._send("charge.success", self._charge_view(transaction)),
                    self._send("invoice.update", invoice)]

    def renewal_fail(self, subscription_code: str) -> list[Delivery]:
        """The renewal charge is declined: the subscription needs attention, invoice.payment_failed."""
        with self._lock:
            subscription = self.subscriptions[subscription_code]
            transaction = self._renewal(subscription, paid=False)
            subscription["status"] = "attention"
            start = datetime.fromisoformat(subscription["next_payment_date"])
            return [self._send("invoice.payment_failed", self._invoice(subscription, transaction, start))]

    def subscription_end(self, subscription_code: str) -> list[Delivery]:
        """Paystack ends it (retries exhausted, or a non-renewing one reaching its date): subscription.disable."""
        with self._lock:
            subscription = self.subscriptions[subscription_code]
            subscription["status"] = "cancelled"
            return [self._send("subscription.disable", dict(subscription))]

    # events, signed as Paystack signs them

    def signature(self, body: bytes, *, secret: str | None = None) -> str:
        return hmac.new((secret or self.secret_key).encode(), body, hashlib.sha512).hexdigest()

    def event(self, name: str, data: dict, *, secret: str | None = None) -> Delivery:
        """An event with any data (what Paystack never sent, for spoofs), signed but not in the outbox."""
        body = json.dumps({"event": name, "data": data}).encode()
        return Delivery(body, {"x-paystack-signature": self.signature(body, secret=secret)})

    def _send(self, name: str, data: dict) -> Delivery:
        delivery = self.event(name, data)
        self.outbox.append(delivery)
        return delivery

    # the REST API

    def handle(self, method: str, path: str, params: dict, headers) -> tuple[int, dict]:
        if headers.get("Authorization") != f"Bearer {self.secret_key}":
            raise PaystackError(401, "Invalid key")
        with self._lock:
            self.requests.append((method, path, params))
            message, data = self._route(method, path.strip("/").split("/"), params)
            return 200, {"status": True, "message": message, "data": data}

    def _route(self, method: str, parts: list[str], params: dict) -> tuple[str, object]:
        match method, parts:
            case "POST", ["transaction", "initialize"]:
                return "Authorization URL created", self._initialize(params)
            case "GET", ["transaction", "verify", reference]:
                if reference not in self.transactions:
                    raise PaystackError(400, "Transaction reference not found")
                return "Verification successful", self._transaction_view(self.transactions[reference])
            case "POST", ["plan"]:
                return "Plan created", self._plan_create(params)
            case "GET", ["plan"]:
                return "Plans retrieved", [plan for plan in self.plans.values() if all(
                    str(plan.get(key)) == str(params[key]) for key in ("amount", "interval") if key in params)]
            case "GET", ["plan", code]:
                return "Plan retrieved", self._plan(code)
            case "GET", ["subscription"]:
                return "Subscriptions retrieved", [dict(row) for row in self.subscriptions.values()
                                                   if self._matches(row, params)]
            case "GET", ["subscription", code]:
                return "Subscription retrieved", dict(self._subscription(code))
            case "POST", ["subscription", "disable"]:
                return "Subscription disabled successfully", self._disable(params)
            case "POST", ["refund"]:
                return "Refund has been queued for processing", self._refund(params)
        raise PaystackError(404, f"{method} /{'/'.join(parts)} is not a Paystack endpoint")

    def _initialize(self, params: dict) -> dict:
        reference = params.get("reference") or f"T{next(self._ids)}"
        if not params.get("email") or "@" not in params["email"]:
            raise PaystackError(400, "Invalid Email Address Passed")
        if not isinstance(params.get("amount"), int) or isinstance(params["amount"], bool) or params["amount"] <= 0:
            raise PaystackError(400, "Invalid Amount Sent")
        if params.get("currency", "NGN") != "NGN":
            raise PaystackError(400, "Currency not supported by merchant")
        if reference in self.transactions:
            raise PaystackError(400, "Duplicate Transaction Reference")
        channels = params.get("channels") or ["card", "bank_transfer"]
        if not set(channels) <= set(CHANNELS):
            raise PaystackError(400, "Invalid channels")
        plan = self._plan(params["plan"]) if params.get("plan") else None
        metadata = params.get("metadata") or ""
        self.transactions[reference] = {
            "id": next(self._ids), "domain": "test", "status": "abandoned", "reference": reference,
            "amount": plan["amount"] if plan else params["amount"], "currency": "NGN", "gateway_response": None,
            "paid_at": None, "created_at": _iso(_now()), "channel": None, "metadata": metadata,
            "customer": self._customer(params["email"]), "authorization": {}, "_plan": plan,
            "_channels": channels, "_callback_url": params.get("callback_url", "")}
        access_code = secrets.token_hex(8)
        return {"authorization_url": f"https://checkout.paystack.test/{access_code}", "access_code": access_code,
                "reference": reference}

    def _plan_create(self, params: dict) -> dict:
        if not params.get("name") or not isinstance(params.get("amount"), int) or params.get("interval") not in (
                "hourly", "daily", "weekly", "monthly", "quarterly", "biannually", "annually"):
            raise PaystackError(400, "Plan name, amount and a valid interval are required")
        code = f"PLN_{secrets.token_hex(7)}"
        plan = {"id": next(self._ids), "name": params["name"], "plan_code": code, "amount": params["amount"],
                "interval": params["interval"], "currency": params.get("currency", "NGN"), "domain": "test",
                "send_invoices": True, "send_sms": True, "createdAt": _iso(_now())}
        self.plans[code] = plan
        return plan

    def _disable(self, params: dict) -> None:
        subscription = self._subscription(params.get("code", ""))
        if params.get("token") != subscription["email_token"] or subscription["status"] not in ("active", "attention"):
            raise PaystackError(400, "Subscription with code not found or already inactive")
        subscription["status"] = "non-renewing"
        self._send("subscription.not_renew", dict(subscription))
        return None

    def _refund(self, params: dict) -> dict:
        wanted = str(params.get("transaction", ""))
        transaction = next((row for row in self.transactions.values()
                            if wanted in (str(row["id"]), row["reference"]) and row["status"] == "success"), None)
        if transaction is None:
            raise PaystackError(400, "Transaction not found or not refundable")
        amount = params.get("amount") or transaction["amount"]
        refund = {"id": next(self._ids), "transaction": self._transaction_view(transaction), "amount": amount,
                  "currency": "NGN", "status": "pending", "domain": "test", "refunded_at": None}
        self.refunds.append(refund)
        transaction["status"] = "reversed"
        self._send("refund.processed", {
            "id": refund["id"], "status": "processed", "transaction_reference": transaction["reference"],
            "refund_reference": None, "amount": amount, "currency": "NGN", "processor": "fake",
            "customer": transaction["customer"], "domain": "test"})
        return refund

    # objects

    def _plan(self, code: str) -> dict:
        plan = self.plans.get(code) or next((row for row in self.plans.values() if str(row["id"]) == code), None)
        if plan is None:
            raise PaystackError(404, "Plan not found")
        return plan

    def _subscription(self, code: str) -> dict:
        if code not in self.subscriptions:
            raise PaystackError(404, "Subscription not found")
        return self.subscriptions[code]

    def _customer(self, email: str) -> dict:
        if email not in self.customers:
            self.customers[email] = {"id": next(self._ids), "first_name": None, "last_name": None, "email": email,
                                     "customer_code": f"CUS_{secrets.token_hex(7)}", "phone": None, "metadata": None,
                                     "risk_action": "default"}
        return self.customers[email]

    def _authorization(self, channel: str) -> dict:
        if channel == "bank_transfer":
            return {"authorization_code": f"AUTH_{secrets.token_hex(5)}", "channel": "bank_transfer",
                    "bank": "Wema Bank", "reusable": False, "country_code": "NG"}
        return {"authorization_code": f"AUTH_{secrets.token_hex(5)}", "bin": "408408", "last4": "4081",
                "exp_month": "12", "exp_year": "2030", "channel": "card", "card_type": "visa", "bank": "TEST BANK",
                "country_code": "NG", "brand": "visa", "reusable": True, "signature": f"SIG_{secrets.token_hex(6)}"}

    def _subscribe(self, transaction: dict) -> dict:
        paid = datetime.fromisoformat(transaction["paid_at"])
        code = f"SUB_{secrets.token_hex(7)}"
        self.subscriptions[code] = {
            "id": next(self._ids), "domain": "test", "status": "active", "subscription_code": code,
            "email_token": secrets.token_hex(8), "amount": transaction["amount"], "cron_expression": "0 0 * * *",
            "next_payment_date": _iso(paid + PERIOD), "open_invoice": None, "createdAt": _iso(paid),
            "plan": transaction["_plan"], "customer": transaction["customer"],
            "authorization": transaction["authorization"]}
        return self.subscriptions[code]

    def _renewal(self, subscription: dict, *, paid: bool) -> dict:
        now = _iso(_now())
        reference = f"T{next(self._ids)}"  # Paystack names renewal charges itself
        self.transactions[reference] = {
            "id": next(self._ids), "domain": "test", "status": "success" if paid else "failed",
            "reference": reference, "amount": subscription["amount"], "currency": "NGN",
            "gateway_response": "Approved" if paid else "Insufficient Funds", "paid_at": now if paid else None,
            "created_at": now, "channel": "card", "metadata": "", "customer": subscription["customer"],
            "authorization": subscription["authorization"], "_plan": subscription["plan"], "_channels": ["card"],
            "_callback_url": ""}
        return self.transactions[reference]

    def _invoice(self, subscription: dict, transaction: dict, start: datetime) -> dict:
        paid = transaction["status"] == "success"
        return {"domain": "test", "invoice_code": f"INV_{secrets.token_hex(7)}", "amount": transaction["amount"],
                "period_start": _iso(start), "period_end": _iso(start + PERIOD), "status": "success" if paid else "failed",
                "paid": paid, "paid_at": transaction["paid_at"], "description": None,
                "authorization": subscription["authorization"],
                "subscription": {key: subscription[key] for key in (
                    "status", "subscription_code", "email_token", "amount", "cron_expression", "next_payment_date",
                    "open_invoice")},
                "customer": subscription["customer"],
                "transaction": {"reference": transaction["reference"], "status": transaction["status"],
                                "amount": transaction["amount"], "currency": "NGN"},
                "created_at": _iso(_now())}

    def _matches(self, subscription: dict, params: dict) -> bool:
        return all(str(value) == str(target) for value, target in (
            (params.get("customer"), subscription["customer"]["id"]), (params.get("plan"), subscription["plan"]["id"]))
            if value is not None)

    @staticmethod
    def _transaction_view(transaction: dict) -> dict:
        """As verify answers: `plan` the code, `plan_object` the plan ({} for none)."""
        shown = {key: value for key, value in transaction.items() if not key.startswith("_")}
        plan = transaction["_plan"]
        return {**shown, "plan": plan["plan_code"] if plan else None, "plan_object": plan or {},
                "paidAt": transaction["paid_at"], "createdAt": transaction["created_at"]}

    @staticmethod
    def _charge_view(transaction: dict) -> dict:
        """As charge.success carries it: `plan` the plan object ({} for none)."""
        shown = {key: value for key, value in transaction.items() if not key.startswith("_")}
        return {**shown, "plan": transaction["_plan"] or {}, "paidAt": transaction["paid_at"]}


@contextmanager
def paystack_server(secret_key: str = "sk_test_mailwell_paystack"):
    """A FakePaystack serving HTTP on 127.0.0.1 at a free port, in a thread, for the block's duration."""
    fake = FakePaystack(secret_key)

    class Handler(BaseHTTPRequestHandler):
        def _answer(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if fake.failing_left > 0:
                fake.failing_left -= 1
                if fake.failing == "close":
                    self.close_connection = True
                    return
                return self._send(500, {"status": False, "message": "An error occurred"})
            url = urlsplit(self.path)
            try:
                params = json.loads(raw) if raw else dict(parse_qsl(url.query))
                self._send(*fake.handle(self.command, url.path, params, self.headers))
            except PaystackError as error:
                self._send(error.status, {"status": False, "message": str(error)})
            except Exception as exc:  # a bug in this server: the fixture fails the test with it
                fake.crashes.append(traceback.format_exc())
                self._send(500, {"status": False, "message": f"fake Paystack crashed: {exc!r}"})

        do_GET = do_POST = _answer

        def _send(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    assert not fake.crashes, "the fake Paystack crashed:\n" + "\n".join(fake.crashes)
