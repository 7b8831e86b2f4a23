"""One-click unsubscribe links (RFC 8058) of campaign mail.

The token is signed with SECRET_KEY (django.core.signing, its own salt; compared in constant time)
and carries the delivery, the account and the address, so it is checked without a database read,
cannot be guessed or altered, never expires, and still unsubscribes after the campaign is deleted.
Unsubscribing suppresses the address for the campaign's account (every campaign of that partner),
stops its enrolments there (their pending steps are skipped) and marks the delivery; doing it
again changes nothing.
"""
from dataclasses import dataclass

from django.conf import settings
from django.core import signing
from django.db import transaction
from django.utils import timezone

from campaigns.feedback import suppress
from campaigns.models import StepDelivery, Suppression
from campaigns.schedule import suppressed

_SALT = "mailwell.campaigns.unsubscribe"


class InvalidUnsubscribeLink(Exception):
    """The token was altered, made up or cut short."""


@dataclass(frozen=True)
class UnsubscribeTarget:
    delivery_id: int
    account_id: int
    email: str
    sender: str  # the campaign's from_email; "" when the campaign is gone


def unsubscribe_token(delivery: StepDelivery) -> str:
    enrollment = delivery.enrollment
    return signing.dumps([delivery.pk, enrollment.campaign.account_id, enrollment.email], salt=_SALT, compress=True)


def unsubscribe_url(delivery: StepDelivery) -> str:
    """The public page and one-click endpoint (portal.unsubscribe), on the platform's public address."""
    return f"{settings.PUBLIC_BASE_URL.rstrip('/')}/u/{unsubscribe_token(delivery)}"


def unsubscribe_target(*, token: str) -> UnsubscribeTarget:
    """Who the link is for; InvalidUnsubscribeLink when it is not one of ours."""
    try:
        delivery_id, account_id, email = signing.loads(token, salt=_SALT)
        delivery_id, account_id = int(delivery_id), int(account_id)
    except (signing.BadSignature, ValueError, TypeError):
        raise InvalidUnsubscribeLink("This unsubscribe link is not valid.") from None
    sender = (StepDelivery.objects.filter(pk=delivery_id).values_list("enrollment__campaign__from_email", flat=True)
              .first()) or ""
    return UnsubscribeTarget(int(delivery_id), int(account_id), str(email), sender)


def unsubscribed(target: UnsubscribeTarget) -> bool:
    """The address gets no campaign mail from this account any more (for whatever reason)."""
    return bool(suppressed(account_id=target.account_id, emails=[target.email]))


@transaction.atomic
def unsubscribe(*, token: str) -> UnsubscribeTarget:
    """Suppress the address for the account, stop its enrolments, mark the delivery; idempotent."""
    target = unsubscribe_target(token=token)
    delivery = StepDelivery.objects.select_related("enrollment__campaign").filter(pk=target.delivery_id).first()
    suppress(account_id=target.account_id, email=target.email, reason=Suppression.Reason.UNSUBSCRIBED,
             campaign=delivery.enrollment.campaign if delivery else None)
    if delivery is not None:
        StepDelivery.objects.filter(pk=delivery.pk, unsubscribed_at__isnull=True).update(
            unsubscribed_at=timezone.now())
    return target
