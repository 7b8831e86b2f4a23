"""Managing webhook endpoints and acting on deliveries (test, retry, replay)."""
import secrets

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from mailcore.errors import DomainError, ErrorCode, InvalidFields
from mailcore.accounts.models import Account
from mailcore.events.catalog import EVENTS
from mailcore.events.models import Event
from mailcore.fieldcrypt import encrypt
from mailcore.ipnets import normalise_ip_list
from mailcore.webhooks.delivery import AttemptResult, delivery_attempt, post_signed
from mailcore.events.models import WebhookDelivery, WebhookEndpoint
from mailcore.throttle import action_count
from mailcore.webhooks.safety import UnsafeDestination, check_url_shape

MAX_ENDPOINTS = 10


class DeliveryNotRetryable(DomainError):
    code = ErrorCode.INVALID


def _new_secret() -> str:
    return f"whsec_{secrets.token_urlsafe(32)}"


def _clean_ips(allowed_ips) -> list[str] | None:
    try:
        return normalise_ip_list(allowed_ips) or None
    except ValueError as exc:
        raise InvalidFields({"allowed_ips": [str(exc)]}) from None


def endpoint_create(*, account: Account, url: str, events: list[str], allowed_ips: list[str] | None = None
                    ) -> tuple[WebhookEndpoint, str]:
    """Create an endpoint and return it with its signing secret, shown this once."""
    errors = {}
    try:
        check_url_shape(url)
    except UnsafeDestination as exc:
        errors["url"] = [str(exc)]
    unknown = [name for name in events if name not in EVENTS]
    if unknown:
        errors["events"] = [f"unknown event {name!r}" for name in unknown]
    elif not events:
        errors["events"] = ["subscribe to at least one event"]
    if errors:
        raise InvalidFields(errors)
    ips = _clean_ips(allowed_ips)
    with transaction.atomic():
        if WebhookEndpoint.objects.select_for_update().filter(account=account).count() >= MAX_ENDPOINTS:
            raise InvalidFields({"url": [f"an account can have at most {MAX_ENDPOINTS} webhook endpoints"]})
        secret = _new_secret()
        endpoint = WebhookEndpoint.objects.create(account=account, url=url, events=list(dict.fromkeys(events)),
                                                  allowed_ips=ips, secret_encrypted=encrypt(secret))
    return endpoint, secret


_UNSET = object()


def endpoint_update(*, endpoint: WebhookEndpoint, is_active=_UNSET, allowed_ips=_UNSET) -> WebhookEndpoint:
    fields = []
    if is_active is not _UNSET:
        endpoint.is_active = bool(is_active)
        fields.append("is_active")
    if allowed_ips is not _UNSET:
        endpoint.allowed_ips = _clean_ips(allowed_ips)
        fields.append("allowed_ips")
    if fields:
        endpoint.save(update_fields=fields)
    return endpoint


def endpoint_rotate_secret(*, endpoint: WebhookEndpoint) -> str:
    secret = _new_secret()
    endpoint.secret_encrypted = encrypt(secret)
    endpoint.save(update_fields=["secret_encrypted"])
    return secret


def endpoint_delete(*, endpoint: WebhookEndpoint) -> None:
    endpoint.delete()


SAMPLE_RECEIVED = {
    "message_id": "<sample-0001@example.com>",
    "mailbox": "inbox@example.com",
    "from": "Sample Sender <sender@example.com>",
    "subject": "Test event from Mailwell",
    "thread_id": "0123456789abcdef",
    "in_reply_to": None,
    "references": "",
    "is_reply": False,
    "preview": "This is a test delivery of the email.received event.",
    "has_attachments": False,
    "size_bytes": 1024,
    "authentication": {"spf": "pass", "dkim": "pass", "dmarc": "pass", "arc": "none"},
}


def endpoint_test(*, endpoint: WebhookEndpoint) -> AttemptResult:
    """Send a sample email.received now, bypassing the queue; nothing is stored. At most
    WEBHOOK_TESTS_PER_HOUR per account: each one makes us call an address the caller chose."""
    from mailcore.webhooks.delivery import envelope_body

    action_count(f"webhook-test:{endpoint.account_id}", limit=settings.WEBHOOK_TESTS_PER_HOUR, what="webhook tests")

    sample = Event(account=endpoint.account, name="email.received", created_at=timezone.now(),
                   data={**SAMPLE_RECEIVED, "received_at": timezone.now().isoformat().replace("+00:00", "Z"),
                         "test": True})
    return post_signed(endpoint, envelope_body(sample, endpoint))


def delivery_retry(*, delivery: WebhookDelivery) -> WebhookDelivery:
    """One fresh attempt for a dead or failed delivery: attempt count reset, same row."""
    reset = WebhookDelivery.objects.filter(
        pk=delivery.pk, status__in=[WebhookDelivery.Status.DEAD, WebhookDelivery.Status.FAILED]
    ).update(status=WebhookDelivery.Status.PENDING, attempts=0, next_attempt_at=None, claimed_until=None,
             response_status=None, response_body="", last_error="")
    if not reset:
        raise DeliveryNotRetryable(f"only a dead or failed delivery can be retried; this one is {delivery.status}")
    return delivery_attempt(delivery.pk, schedule_retries=False)


def delivery_replay(*, delivery: WebhookDelivery) -> WebhookDelivery:
    """A new delivery of the same event, which then follows the usual retry schedule."""
    return WebhookDelivery.objects.create(endpoint=delivery.endpoint, event=delivery.event,
                                          next_attempt_at=timezone.now(), replayed_from=delivery)
