"""The portal's sections, as data: later features add their entry here."""
from dataclasses import dataclass

from django.urls import reverse


@dataclass(frozen=True)
class Section:
    label: str
    url_name: str
    partner_only: bool = False


SECTIONS = [
    Section("Dashboard", "portal:dashboard"),
    Section("Domains", "portal:domains", partner_only=True),
    Section("Clients", "portal:clients", partner_only=True),
    Section("Mailboxes", "portal:mailboxes", partner_only=True),
    Section("Webhooks", "portal:webhooks"),
    Section("Billing", "portal:billing"),
    Section("Settings", "portal:settings"),
    Section("API docs", "api-docs"),
]


def navigation_for(request, account) -> list[dict]:
    is_partner = account is not None and hasattr(account, "partner")
    items = []
    for section in SECTIONS:
        if section.partner_only and not is_partner:
            continue
        url = reverse(section.url_name)
        active = request.path == url or (url != "/" and request.path.startswith(url))
        items.append({"label": section.label, "url": url, "active": active})
    return items
