"""The inbound screening the kernel asks for (mailcore.inbound.screening): rspamd's verdict on the
message with its connection facts, read against each recipient's thresholds and sender lists."""
from mailcore.inbound.screening import Arriving, Screening
from mailcore.mailboxes.models import Mailbox


def screen(*, raw: bytes, arriving: Arriving, mailboxes: dict[str, Mailbox]) -> Screening | None:
    return None  # built in issue 33 (the scanner helper)
