"""Who a mailbox might write to: the hook behind the compose form's address suggestions. First the
owner's contacts that have an address (by name; read fresh on every call, so a contact added or
changed a second ago is suggested at once), then the people this mailbox recently wrote to (its
sends) or heard from (the senders of its Inbox), most recent first, its own addresses left out
(that part is cached for a few minutes: it reads the mail store)."""
from email.utils import getaddresses

from django.core.cache import cache

from contacts.models import Contact
from contacts.selectors import contact_search
from mailcore.mailboxes.models import Mailbox
from mailcore.outbound.models import OutboundMessage
from webmail.drafts import format_address
from mailcore.mailboxes.selectors import is_own_address, own_addresses
from mailcore.store.base import StoreError
from mailcore.store.factory import store_for

RECENT = 200  # sends and Inbox messages looked at
CACHE_SECONDS = 300


def _candidates(mailbox: Mailbox) -> list[str]:
    """Every remembered correspondent, newest first, one entry per address ("Name <address>")."""
    dated: list[tuple[float, str, str]] = []
    # Only the address lists travel: a payload can carry a whole message (attachments, a message
    # from the owner's mail client).
    sends = OutboundMessage.objects.filter(mailbox=mailbox).order_by("-created_at").values_list(
        "created_at", "payload__to", "payload__cc", "payload__bcc")
    for created_at, *lists in sends[:RECENT]:
        for address in [address for listed in lists for address in listed or []]:
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


def _contacts(mailbox: Mailbox, query: str, limit: int) -> list[tuple[str, str]]:
    """(address, "Name <address>") of the owner's contacts matching every word of the query (name,
    address or company), by name; none when the mailbox's plan has no contacts."""
    if not mailbox.effective_plan.has_feature("contacts"):
        return []
    rows = contact_search(Contact.objects.filter(book__mailbox=mailbox).exclude(email=""), query)
    return [(email, format_address(name, email))
            for name, email in rows.order_by("name", "pk").values_list("name", "email")[:limit]]


def recipient_suggestions(*, mailbox: Mailbox, query: str, limit: int = 8) -> list[str]:
    """Up to `limit` people whose name or address contains the query (all, for an empty one): the
    owner's contacts first, then recent correspondents not among them."""
    needle = query.strip()
    contacts = _contacts(mailbox, needle, limit)
    known = {address.lower() for address, _ in contacts}
    found = [entry for _, entry in contacts]
    if len(found) >= limit:
        return found
    key = f"webmail:recipients:{mailbox.pk}"
    candidates = cache.get(key)
    if candidates is None:
        candidates = _candidates(mailbox)
        cache.set(key, candidates, CACHE_SECONDS)
    folded = needle.casefold()
    for entry in candidates:
        if folded in entry.casefold() and getaddresses([entry])[0][1].lower() not in known:
            found.append(entry)
            if len(found) == limit:
                break
    return found
