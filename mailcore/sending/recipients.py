"""Who a mailbox might write to: the hook behind the compose form's address suggestions. Until
contacts exist (issue 16 adds them here), it is the people this mailbox recently wrote to (its
sends) or heard from (the senders of its Inbox), most recent first, its own addresses left out."""
from email.utils import getaddresses

from django.core.cache import cache

from mailcore.mailboxes.models import Mailbox
from mailcore.outbound.models import OutboundMessage
from mailcore.sending.drafts import format_address
from mailcore.sending.replies import is_own_address, own_addresses
from mailcore.store.base import StoreError
from mailcore.store.factory import store_for

RECENT = 200  # sends and Inbox messages looked at
CACHE_SECONDS = 300


def _candidates(mailbox: Mailbox) -> list[str]:
    """Every remembered correspondent, newest first, one entry per address ("Name <address>")."""
    dated: list[tuple[float, str, str]] = []
    sends = OutboundMessage.objects.filter(mailbox=mailbox).order_by("-created_at").values_list("created_at", "payload")
    for created_at, payload in sends[:RECENT]:
        for address in [*payload.get("to", []), *payload.get("cc", []), *payload.get("bcc", [])]:
            dated.append((created_at.timestamp(), "", address))
    try:
        page = store_for(mailbox).list("INBOX", per_page=RECENT)
    except StoreError:  # the mail server is away: suggest from the sends alone
        page = None
    for summary in page.messages if page else []:
        when = summary.date.timestamp() if summary.date else 0
        for display, address in getaddresses([summary.from_]):
            if "@" in address:
                dated.append((when, display, address))
    own = own_addresses(mailbox)
    names = {address.lower(): display for _, display, address in dated if display}
    found: dict[str, str] = {}
    for _, _, address in sorted(dated, key=lambda item: item[0], reverse=True):
        key = address.lower()
        if key not in found and not is_own_address(address, own):
            found[key] = format_address(names.get(key, ""), address)
    return list(found.values())


def recipient_suggestions(*, mailbox: Mailbox, query: str, limit: int = 8) -> list[str]:
    """Up to `limit` correspondents whose name or address contains the query (all, for an empty one)."""
    key = f"webmail:recipients:{mailbox.pk}"
    candidates = cache.get(key)
    if candidates is None:
        candidates = _candidates(mailbox)
        cache.set(key, candidates, CACHE_SECONDS)
    needle = query.strip().casefold()
    return [entry for entry in candidates if needle in entry.casefold()][:limit]
