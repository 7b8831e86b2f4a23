"""Forwarding rules: created unconfirmed, confirmed by the target through a signed link sent to it.

Mail forwards only while a rule is enabled and confirmed (`ForwardingRule.is_live`, read by
`mailcore.inbound.recipients`). The link's token is signed with SECRET_KEY (django.core.signing)
and names the rule, its mailbox and its target, so it confirms that one rule and nothing else.
"""
import logging
import smtplib
from datetime import timedelta

from django.conf import settings
from django.core import signing
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.utils import timezone

from mailcore.errors import DomainError, ErrorCode, InvalidFields
from mailcore.mailboxes.models import ForwardingRule, Mailbox
from mailcore.mailboxes.selectors import is_own_address, own_addresses
from mailcore.throttle import action_count

log = logging.getLogger(__name__)

CONFIRM_SALT = "mailwell.forwarding.confirm"
CONFIRM_MAX_AGE = timedelta(days=7)
CONFIRM_PATH = "/v1/hosting/forwarding/confirm/"
# validate_email accepts quoted local parts ("a b"@x) and address literals (x@[10.0.0.1]): the relay
# refuses the first as envelope addresses, and neither belongs in a forwarding target.
_UNSAFE = set('"<>\\()[],;:')


class ConfirmationInvalid(Exception):
    """The link is tampered, expired, or its rule is gone."""


class ConfirmationNotSent(DomainError):
    """The confirmation mail could not be handed to the mail server; no rule was kept."""

    code = ErrorCode.UNAVAILABLE


def _clean_target(mailbox: Mailbox, forward_to: str) -> str:
    address = (forward_to or "").strip().lower()
    try:
        validate_email(address)
    except ValidationError:
        raise InvalidFields({"forward_to": ["enter a valid email address"]}) from None
    if len(address) > 320 or _UNSAFE & set(address) or any(char.isspace() or ord(char) < 32 for char in address):
        raise InvalidFields({"forward_to": ["enter a plain address (no quotes, spaces or brackets)"]})
    if is_own_address(address, own_addresses(mailbox)):
        raise InvalidFields({"forward_to": ["that address delivers to this mailbox itself"]})
    return address


def confirmation_token(rule: ForwardingRule) -> str:
    return signing.dumps({"rule": rule.pk, "mailbox": rule.mailbox_id, "to": rule.forward_to}, salt=CONFIRM_SALT)


def confirmation_url(rule: ForwardingRule) -> str:
    return f"{settings.PUBLIC_BASE_URL.rstrip('/')}{CONFIRM_PATH}{confirmation_token(rule)}"


def _send_confirmation(rule: ForwardingRule) -> None:
    days = CONFIRM_MAX_AGE.days
    body = (
        f"{rule.mailbox.address} asks to forward its mail to {rule.forward_to}.\n\n"
        f"To accept, open this link and press Confirm (it works for {days} days):\n\n"
        f"{confirmation_url(rule)}\n\n"
        "Nothing is forwarded to you until you confirm. If you did not expect this, ignore this message.\n"
    )
    send_mail(f"Confirm forwarding from {rule.mailbox.address}", body, None, [rule.forward_to])


def forwarding_rule_create(*, mailbox: Mailbox, email: str, forward_to: str, keep_copy: bool = True) -> ForwardingRule:
    """A rule that stays dormant until its target confirms through the link mailed to it."""
    if (email or "").strip().lower() != mailbox.address.lower():
        raise InvalidFields({"email": [f"must be this mailbox's address, {mailbox.address}"]})
    forward_to = _clean_target(mailbox, forward_to)
    duplicate = InvalidFields({"forward_to": ["this mailbox already forwards to that address"]})
    if ForwardingRule.objects.filter(mailbox=mailbox, forward_to=forward_to).exists():
        raise duplicate
    # Each rule mails an address the caller chose: bounded per account, so it cannot be a spam cannon.
    action_count(f"forward-confirm:{mailbox.account_id}", limit=settings.FORWARDING_CONFIRMATIONS_PER_HOUR,
                 what="forwarding confirmations")
    try:
        with transaction.atomic():
            rule = ForwardingRule.objects.create(mailbox=mailbox, forward_to=forward_to, keep_copy=keep_copy)
    except IntegrityError:
        raise duplicate from None
    # Sent after the row is written, outside any transaction of ours (a slow relay must not hold a
    # SQLite write lock); a rule whose mail was not sent is taken back, so none waits for nothing.
    try:
        _send_confirmation(rule)
    except (smtplib.SMTPException, OSError) as error:
        log.warning("forwarding confirmation to %s not sent: %s", forward_to, error)
        rule.delete()
        raise ConfirmationNotSent(f"the confirmation mail to {forward_to} could not be sent; try again") from None
    return rule


def forwarding_rule_from_token(token: str) -> ForwardingRule:
    """The rule a confirmation link names, without confirming it."""
    try:
        claims = signing.loads(token, salt=CONFIRM_SALT, max_age=CONFIRM_MAX_AGE)
    except signing.SignatureExpired:
        raise ConfirmationInvalid("this confirmation link has expired; ask for the forwarding to be set up again") \
            from None
    except signing.BadSignature:
        raise ConfirmationInvalid("unknown or tampered confirmation link") from None
    if not isinstance(claims, dict):
        raise ConfirmationInvalid("unknown or tampered confirmation link")
    rule = ForwardingRule.objects.select_related("mailbox").filter(
        pk=claims.get("rule"), mailbox_id=claims.get("mailbox"), forward_to=claims.get("to")).first()
    if rule is None:
        raise ConfirmationInvalid("this forwarding rule no longer exists")
    return rule


def forwarding_rule_confirm(*, token: str) -> ForwardingRule:
    """Idempotent: a second confirmation keeps the first time."""
    rule = forwarding_rule_from_token(token)
    ForwardingRule.objects.filter(pk=rule.pk, confirmed_at__isnull=True).update(confirmed_at=timezone.now())
    rule.refresh_from_db(fields=["confirmed_at"])
    return rule


def forwarding_rule_set_enabled(*, rule: ForwardingRule, enabled: bool) -> ForwardingRule:
    rule.enabled = enabled
    rule.save(update_fields=["enabled"])
    return rule


def forwarding_rule_delete(*, rule: ForwardingRule) -> None:
    rule.delete()
