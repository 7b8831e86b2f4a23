"""Mailbox owners sign in to the webmail with their address and the mailbox's own password (the
hash Dovecot verifies), throttled per address and per client IP. A session lasts only as long as
the password it was opened with: a new password, or a deleted mailbox, ends it. A disabled mailbox
is refused with the reason its owner can act on; a mailbox downgraded to Free works on Free limits."""
from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from mailcore.credentials import credential_new, digest_matches, prefix_of
from mailcore.errors import DomainError, ErrorCode
from mailcore.mailboxes.models import Mailbox
from mailcore.mailboxes.passwords import (
    mailbox_credential_stamp, mailbox_credential_stamp_matches, mailbox_password_verify,
)
from mailcore.partners.models import PartnerMailbox
from mailcore.throttle import MAILBOX_LOGIN, throttle_attempt, throttle_forgive, throttle_keys
from webmail.models import WebmailSession

KIND = "wm"
SHORT = timedelta(hours=12)  # a browser session without "remember me"
REMEMBER = timedelta(days=30)


class WebmailLoginRefused(DomainError):
    code = ErrorCode.FORBIDDEN


WRONG = "Wrong address or password."
WHY_DISABLED = {
    PartnerMailbox.Status.PENDING_PAYMENT: "This mailbox is waiting for its first payment. It opens as soon as "
                                           "the payment is confirmed.",
    PartnerMailbox.Status.SUSPENDED: "This mailbox is suspended: its subscription was not paid or its term ended. "
                                     "Ask your email provider to renew it; your mail is kept.",
    PartnerMailbox.Status.EXPIRED: "This mailbox's subscription has ended. Ask your email provider to renew it; "
                                   "your mail is kept.",
}


def _why_disabled(mailbox: Mailbox) -> str:
    partner_mailbox = PartnerMailbox.objects.filter(mailbox=mailbox).only("status").first()
    if partner_mailbox is not None and partner_mailbox.status in WHY_DISABLED:
        return WHY_DISABLED[partner_mailbox.status]
    return "This mailbox is switched off. Ask whoever gave it to you."


def mailbox_of_partner(mailbox: Mailbox, partner_id: int) -> bool:
    """A mailbox of one of the partner's clients: a partner mailbox of it, or on a client's domain."""
    return Mailbox.objects.filter(pk=mailbox.pk).filter(
        Q(partner_mailbox__partner_id=partner_id) | Q(domain__client__partner_id=partner_id)).exists()


def webmail_login(*, address: str, password: str, client_ip: str, remember: bool = False,
                  partner_id: int | None = None) -> tuple[WebmailSession, str]:
    """Check the mailbox password and open a session. `partner_id` (a partner's own webmail
    hostname) admits only the mailboxes of that partner's clients; anyone else gets the same answer
    as a wrong password. Returns the row and the raw token."""
    keys = throttle_keys(MAILBOX_LOGIN, address, client_ip)
    throttle_attempt(keys)
    mailbox = Mailbox.objects.filter(address__iexact=address.strip(), kind=Mailbox.Kind.MANAGED).first()
    ok = mailbox_password_verify(password, mailbox.password_hash if mailbox is not None else None)
    if not ok or (partner_id is not None and not mailbox_of_partner(mailbox, partner_id)):
        raise WebmailLoginRefused(WRONG)
    throttle_forgive(keys)
    if not mailbox.is_active:
        raise WebmailLoginRefused(_why_disabled(mailbox))
    credential = credential_new(KIND)
    session = WebmailSession.objects.create(
        mailbox=mailbox, token_prefix=credential.prefix, token_digest=credential.digest, remember=remember,
        client_ip=client_ip or None, expires_at=timezone.now() + (REMEMBER if remember else SHORT),
        credential_stamp=mailbox_credential_stamp(mailbox.password_hash))
    return session, credential.raw


def webmail_session_for(raw: str | None, *, partner_id: int | None = None) -> WebmailSession | None:
    """The live session a cookie names, with its mailbox; None when unknown, ended, expired, the
    mailbox has been switched off or its password changed (or removed: a deleted mailbox) since, or
    (with `partner_id`, on a partner's hostname) the mailbox is not one of that partner's clients'."""
    prefix = prefix_of(raw or "", KIND)
    if prefix is None:
        return None
    session = WebmailSession.objects.select_related("mailbox__domain").filter(token_prefix=prefix).first()
    if (session is None or not digest_matches(raw, session.token_digest) or session.ended_at is not None
            or session.expires_at <= timezone.now() or not session.mailbox.is_active
            or not mailbox_credential_stamp_matches(session.credential_stamp, session.mailbox.password_hash)):
        return None
    if partner_id is not None and not mailbox_of_partner(session.mailbox, partner_id):
        return None
    return session


def webmail_logout(*, session: WebmailSession) -> None:
    WebmailSession.objects.filter(pk=session.pk, ended_at__isnull=True).update(ended_at=timezone.now())


def mailbox_sessions_end(*, mailbox: Mailbox) -> None:
    """The mailbox's holder is forgotten (mailcore.holders): every webmail session of it ends."""
    WebmailSession.objects.filter(mailbox=mailbox, ended_at__isnull=True).update(ended_at=timezone.now())
