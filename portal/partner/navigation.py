"""The portal's sections, as data: later features add their entry here."""
from dataclasses import dataclass

from django.urls import reverse


@dataclass(frozen=True)
class Section:
    label: str
    url_name: str
    partner_only: bool = False
    others_only: bool = False  # accounts without a partner profile (their own domains' DNS records)


SECTIONS = [
    Section("Dashboard", "portal:dashboard"),
    Section("Domains", "portal:domains", partner_only=True),
    Section("Domains", "portal:account-domains", others_only=True),
    Section("Clients", "portal:clients", partner_only=True),
    Section("Mailboxes", "portal:mailboxes", partner_only=True),
    Section("Quarantine", "portal:quarantine", partner_only=True),
    Section("Webmail branding", "portal:branding", partner_only=True),
    Section("Webhooks", "portal:webhooks"),
    Section("Billing", "portal:billing"),
    Section("Earnings", "portal:earnings", partner_only=True),
    Section("Settings", "portal:settings"),
    Section("API docs", "api-docs"),
]


def navigation_for(request, account) -> list[dict]:
    is_partner = account is not None and hasattr(account, "partner")
    items = []
    for section in SECTIONS:
        if (section.partner_only and not is_partner) or (section.others_only and is_partner):
            continue
        url = reverse(section.url_name)
        matches = request.path == url or (url != "/" and request.path.startswith(url))
        items.append({"label": section.label, "url": url, "active": matches})
    matching = [item for item in items if item["active"]]
    for item in matching[:-1] if len(matching) > 1 else []:  # the most specific section wins
        item["active"] = len(item["url"]) >= max(len(other["url"]) for other in matching)
    return items
