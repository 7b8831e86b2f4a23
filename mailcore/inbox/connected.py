"""Mailboxes at another provider, connected over IMAP with the owner's credentials."""
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.utils import timezone

from mailcore.accounts.models import Account
from mailcore.domains.names import InvalidHostname, hostname_to_ascii
from mailcore.fieldcrypt import encrypt
from mailcore.mailboxes.models import Mailbox
from mailcore.store.base import StoreError
from mailcore.store.factory import connected_store

# How long a successful IMAP login counts as a "recently cached IMAP session" (agent tools rule 2).
SESSION_CACHE_TTL = timedelta(hours=24)


def mailbox_connect(
    *, account: Account, email: str, imap_host: str, imap_port: int, imap_tls: bool, username: str, password: str
) -> Mailbox:
    """Check the credentials with a real login, then keep them encrypted."""
    email = email.strip().lower()
    try:
        validate_email(email)
    except ValidationError:
        raise ValidationError({"email": ["enter a valid email address"]}) from None
    if Mailbox.objects.filter(address=email).exists():
        raise ValidationError({"email": ["this address is already a mailbox here"]})
    try:
        imap_host = hostname_to_ascii(imap_host, allow_ip=True, require_dot=False)
    except InvalidHostname as error:
        raise ValidationError({"imap_host": [str(error)]}) from None
    mailbox = Mailbox(
        account=account,
        kind=Mailbox.Kind.CONNECTED,
        local_part=email.split("@")[0],
        address=email,
        imap_host=imap_host,
        imap_port=imap_port,
        imap_tls=imap_tls,
        imap_username=username,
        imap_password_encrypted=encrypt(password),
    )
    try:
        connected_store(mailbox).folders()
    except StoreError as exc:
        raise ValidationError({"password": [f"could not log in to {imap_host}:{imap_port}: {exc}"]}) from None
    mailbox.imap_session_verified_at = timezone.now()
    mailbox.save()
    return mailbox


def mailbox_session_touch(*, mailbox: Mailbox) -> None:
    """Record a successful IMAP use of a connected mailbox."""
    if not mailbox.is_managed:
        Mailbox.objects.filter(pk=mailbox.pk).update(imap_session_verified_at=timezone.now())


def mailbox_has_cached_session(mailbox: Mailbox) -> bool:
    if mailbox.is_managed:
        return True
    verified = mailbox.imap_session_verified_at
    return verified is not None and timezone.now() - verified < SESSION_CACHE_TTL
