"""Handing mail to the listener and reading what it did, as the inbound tests need."""
import smtplib

from mailcore.events.models import Event
from mailcore.store.factory import store_for


def lmtp_send(port: int, raw: bytes, to: list[str], sender: str = "") -> dict:
    """One LMTP transaction with our listener; "" is the null sender of bounces."""
    with smtplib.LMTP("127.0.0.1", port) as client:
        return client.sendmail(sender, to, raw)


def inbox(mailbox) -> list[bytes]:
    """The raw messages in the mailbox's INBOX, oldest first."""
    store = store_for(mailbox)
    return [store.fetch("INBOX", summary.uid).raw for summary in reversed(store.list("INBOX").messages)]


def events(name: str) -> list[dict]:
    return [event.data for event in Event.objects.filter(name=name).order_by("id")]
