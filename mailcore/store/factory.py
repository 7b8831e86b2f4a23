"""Which store serves a mailbox: Dovecot (through the master user), the embedded store, or the
provider a connected mailbox lives at."""
from django.conf import settings

from mailcore.fieldcrypt import decrypt
from mailcore.mailboxes.models import Mailbox
from mailcore.store.base import MailStore

# A connected provider's answer to one command (a search of a large folder takes a while); the
# connection and login get CONNECTED_MAILBOX_CHECK_SECONDS.
CONNECTED_READ_TIMEOUT_SECONDS = 15


def store_for(mailbox: Mailbox) -> MailStore:
    if not mailbox.is_managed:
        return connected_store(mailbox)
    if settings.MAIL_STORE == "imap":
        from mailcore.store.imap import ImapStore, managed_mailbox_login

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
    """The provider a connected mailbox lives at, with the owner's own login."""
    from mailcore.store.imap import ImapStore

    return ImapStore(
        host=mailbox.imap_host,
        port=mailbox.imap_port,
        username=mailbox.imap_username,
        password=decrypt(mailbox.imap_password_encrypted),
        tls=mailbox.imap_tls,
        timeout=CONNECTED_READ_TIMEOUT_SECONDS,
        remote=True,
    )
