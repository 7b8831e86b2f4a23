"""Small display helpers for the webmail's templates."""
from email.utils import parseaddr
from functools import lru_cache

from django import template

register = template.Library()

FOLDER_LABELS = {"INBOX": "Inbox"}


@register.filter
@lru_cache(maxsize=2048)  # a list shows the same senders again and again
def sender_name(value: str) -> str:
    """ "Amy Example <amy@example.test>" → "Amy Example"; a bare address stays as it is."""
    first = (value or "").split(",")[0]
    name, address = parseaddr(first)
    return name or address or first


@register.filter
def folder_label(name: str) -> str:
    """How a folder is named to people: IMAP's INBOX is "Inbox"."""
    return FOLDER_LABELS.get(name, name)
