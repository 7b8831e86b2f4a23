"""The intake for provider webhooks: verify the signature on the raw body, normalise, apply."""
import logging

from billing.providers.base import SignatureInvalid
from billing.providers.registry import provider_named
from billing.services.events import provider_event_apply

log = logging.getLogger(__name__)


def webhook_receive(provider_name: str, body: bytes, headers) -> str:
    """Apply one signed provider event; returns its kind. Raises SignatureInvalid (answered 400,
    nothing changed) for a bad signature or an unreadable body."""
    event = provider_named(provider_name).webhook_parse(body, headers)
    provider_event_apply(event)
    return event.kind


__all__ = ["SignatureInvalid", "webhook_receive"]
