"""Opening a message in the webmail: shown as mailcore.inbox.display prepares it, with remote images
allowed once (this view) or always for the sender (webmail.consent), and marked seen."""

from mailcore.errors import InvalidFields
from mailcore.inbox.display import DisplayedMessage, message_display, sender_address
from mailcore.inbox.services import inbox_message, message_update
from mailcore.mailboxes.models import Mailbox
from webmail.consent import sender_images_allow, sender_images_allowed, sender_images_revoke


def message_open(*, mailbox: Mailbox, folder: str, uid: int, images_once: bool = False) -> DisplayedMessage:
    shown = message_display(mailbox=mailbox, folder=folder, uid=uid, images_once=images_once,
                            images_always=lambda sender: sender_images_allowed(mailbox=mailbox, sender=sender))
    if not shown.found.seen:
        message_update(mailbox=mailbox, folder=shown.folder, uid=shown.uid, seen=True)
    return shown


IMAGE_CHOICES = ("always", "revoke")


def message_images_always(*, mailbox: Mailbox, folder: str, uid: int, choice: str) -> str:
    """Always show (`always`) or stop always showing (`revoke`) remote images from this message's
    sender; returns the sender's address. The sender is read from the message, never taken from the
    request, and the message is found before the choice is checked (no such message: not found)."""
    found = inbox_message(mailbox=mailbox, folder=folder, uid=uid)
    if choice not in IMAGE_CHOICES:
        raise InvalidFields({"choice": ["choose to always show images or to be asked again."]})
    sender = sender_address(found.message.from_)
    if choice == "always":
        sender_images_allow(mailbox=mailbox, sender=sender)
    else:
        sender_images_revoke(mailbox=mailbox, sender=sender)
    return sender
