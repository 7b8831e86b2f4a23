"""Which store serves a mailbox: Dovecot (through the master user), the embedded store, or the
provider a connected mailbox lives at."""
from django.conf import settings

from mailcore.fieldcrypt import decrypt
from mailcore.mailboxes.models import Mailbox
from mailcore.store.base import MailStore

# A connected provider's answer to one command; the connection and login get
# CONNECTED_MAILBOX_CHECK_SECONDS, the whole session CONNECTED_MAILBOX_SESSION_SECONDS.
CONNECTED_READ_TIMEOUT_SECONDS = 10


def store_for(mailbox: Mailbox) -> MailStore:
    if not mailbox.is_managed:
        return connected_store(mailbox)
    if settings.MAIL_STORE == "imap":
        from mailcore.store.imap import ImapStore
        from mailcore.store.imap_pool import managed_mailbox_login

        return ImapStore(
            host=settings.IMAP_HOST,
            port=settings.IMAP_PORT,
            username=managed_mailbox_login(mailbox.address),
            password=settings.DOVECOT_MASTER_PASSWORD,
            tls=settings.IMAP_TLS,
            timeout=settings.IMAP_TIMEOUT_SECONDS,
            # A connection stays logged in after the mailbox is switched off: only a live one reuses.
            pooled=mailbox.is_active,
            usage_clone=mailbox.address,
        )
    from mailcore.store.embedded import EmbeddedStore

    return EmbeddedStore(mailbox)


def connected_store(mailbox: Mailbox) -> MailStore:
    """The provider a connected mailbox lives at, with the owner's own login: its account's sessions
    counted, and nothing read that is larger than a message its plan would take (attachments
    base64-encoded, and a megabyte of text and headers)."""
    from mailcore.store.imap import ImapStore

    max_message = (mailbox.effective_plan.attachment_max_mb * 4 // 3 + 1) * 1024 * 1024
    return ImapStore(
        host=mailbox.imap_host,
        port=mailbox.imap_port,
        username=mailbox.imap_username,
        password=decrypt(mailbox.imap_password_encrypted),
        tls=mailbox.imap_tls,
        timeout=min(CONNECTED_READ_TIMEOUT_SECONDS, settings.CONNECTED_MAILBOX_SESSION_SECONDS),
        remote=True,
        sessions_key=f"connected-sessions:{mailbox.account_id}",
        max_literal=max_message,
    )
