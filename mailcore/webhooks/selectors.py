from django.db.models import QuerySet

from mailcore.accounts.models import Account
from mailcore.events.models import WebhookDelivery, WebhookEndpoint


def endpoint_list(*, account: Account) -> QuerySet[WebhookEndpoint]:
    return WebhookEndpoint.objects.filter(account=account)


def endpoint_get(*, account: Account, endpoint_id: int) -> WebhookEndpoint:
    return WebhookEndpoint.objects.get(account=account, pk=endpoint_id)


def delivery_list(*, endpoint: WebhookEndpoint, limit: int = 50) -> QuerySet[WebhookDelivery]:
    return WebhookDelivery.objects.filter(endpoint=endpoint).select_related("event")[:limit]


def delivery_get(*, endpoint: WebhookEndpoint, delivery_id: int) -> WebhookDelivery:
    return WebhookDelivery.objects.select_related("endpoint", "event").get(endpoint=endpoint, pk=delivery_id)
