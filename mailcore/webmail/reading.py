"""Opening a message in the webmail: shown as mailcore.inbox.display prepares it, with remote images
allowed once (this view) or always for the sender (mailcore.webmail.consent), and marked seen."""
from mailcore.inbox.display import DisplayedMessage, message_display, sender_address
from mailcore.inbox.services import inbox_message, message_update
from mailcore.mailboxes.models import Mailbox
from mailcore.webmail.consent import sender_images_allow, sender_images_allowed, sender_images_revoke


def message_open(*, mailbox: Mailbox, folder: str, uid: int, images_once: bool = False) -> DisplayedMessage:
    shown = message_display(mailbox=mailbox, folder=folder, uid=uid, images_once=images_once,
                            images_always=lambda sender: sender_images_allowed(mailbox=mailbox, sender=sender))
    if not shown.found.seen:
        message_update(mailbox=mailbox, folder=shown.folder, uid=shown.uid, seen=True)
    return shown


def message_images_always(*, mailbox: Mailbox, folder: str, uid: int, always: bool) -> str:
    """Always show (or stop always showing) remote images from this message's sender; returns the
    sender's address. The sender is read from the message, never taken from the request."""
    found = inbox_message(mailbox=mailbox, folder=folder, uid=uid)
    sender = sender_address(found.message.from_)
    if always:
        sender_images_allow(mailbox=mailbox, sender=sender)
    else:
        sender_images_revoke(mailbox=mailbox, sender=sender)
    return sender
