"""What a mailbox owner changes about the mailbox itself from the webmail: the password (the hash
Dovecot verifies, so mail apps need the new one at once) and reads of its forwarding rules. The
writes reuse the mailboxes services the partner API and portal call."""
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from mailcore.errors import InvalidFields
from mailcore.mailboxes.models import ForwardingRule, Mailbox
from mailcore.mailboxes.passwords import mailbox_credential_stamp, mailbox_password_verify
from mailcore.mailboxes.services import mailbox_set_password
from mailcore.partners.mailboxes import MIN_PASSWORD
from mailcore.throttle import MAILBOX_LOGIN, throttle_attempt, throttle_forgive, throttle_keys
from webmail.models import WebmailSession

PASSWORD_MAX = 1024


def owner_password_change(*, session: WebmailSession, current_password: str, new_password: str,
                          client_ip: str) -> int:
    """Check the current password (throttled), set the new one, and end the mailbox's other webmail
    sessions; this one stays. Returns how many sessions ended. Raises LoginThrottled or InvalidFields."""
    mailbox = session.mailbox
    keys = throttle_keys(MAILBOX_LOGIN, mailbox.address, client_ip)  # a guess like any sign-in's
    throttle_attempt(keys)
    errors: dict[str, list[str]] = {}
    if mailbox_password_verify(current_password or "", mailbox.password_hash):
        throttle_forgive(keys)
    else:
        errors["current_password"] = ["that is not this mailbox's current password"]
    if len(new_password or "") < MIN_PASSWORD:
        errors["new_password"] = [f"at least {MIN_PASSWORD} characters"]
    elif len(new_password) > PASSWORD_MAX:
        errors["new_password"] = [f"at most {PASSWORD_MAX} characters"]
    elif new_password == current_password:
        errors["new_password"] = ["choose a password different from the current one"]
    if errors:
        raise InvalidFields(errors)
    with transaction.atomic():
        mailbox_set_password(mailbox=mailbox, password=new_password)
        session.credential_stamp = mailbox_credential_stamp(mailbox.password_hash)
        session.save(update_fields=["credential_stamp"])
        return (WebmailSession.objects.filter(mailbox=mailbox, ended_at__isnull=True).exclude(pk=session.pk)
                .update(ended_at=timezone.now()))


def owner_forwarding_rules(*, mailbox: Mailbox) -> QuerySet[ForwardingRule]:
    return ForwardingRule.objects.filter(mailbox=mailbox).select_related("mailbox")


def owner_forwarding_rule(*, mailbox: Mailbox, rule_id: int) -> ForwardingRule:
    """The mailbox's rule; another mailbox's is ForwardingRule.DoesNotExist."""
    return owner_forwarding_rules(mailbox=mailbox).get(pk=rule_id)
