"""Remote images a mailbox owner chose to always show, per sender address. Consent is keyed on
the From address as the message shows it: a forged From gets the images shown, which is why it is
only ever about loading pictures (and tracking pixels are removed regardless)."""

from mailcore.errors import InvalidFields
from mailcore.mailboxes.models import Mailbox
from webmail.models import RemoteImageSender


def _sender(sender: str) -> str:
    address = (sender or "").strip().lower()
    if "@" not in address or len(address) > 320 or any(char.isspace() or ord(char) < 32 for char in address):
        raise InvalidFields({"sender": ["This message has no sender address to remember."]})
    return address


def sender_images_allowed(*, mailbox: Mailbox, sender: str) -> bool:
    address = (sender or "").strip().lower()
    return bool(address) and RemoteImageSender.objects.filter(mailbox=mailbox, sender=address).exists()


def sender_images_allow(*, mailbox: Mailbox, sender: str) -> RemoteImageSender:
    """Always show remote images in mail from this address (idempotent)."""
    consent, _ = RemoteImageSender.objects.get_or_create(mailbox=mailbox, sender=_sender(sender))
    return consent


def sender_images_revoke(*, mailbox: Mailbox, sender: str) -> bool:
    """Ask again before showing this sender's images; False when they were not always shown."""
    deleted, _ = RemoteImageSender.objects.filter(mailbox=mailbox, sender=_sender(sender)).delete()
    return bool(deleted)


def senders_with_images(*, mailbox: Mailbox) -> list[str]:
    return list(RemoteImageSender.objects.filter(mailbox=mailbox).order_by("sender").values_list("sender", flat=True))
