"""The scopes an API key can carry (spec: API key resource and Authentication item 8)."""

USER_SCOPES = {
    "send": "Send mail with POST /mail/send",
    "mailboxes:read": "Read mailboxes and messages",
    "mailboxes:write": "Change messages and mailboxes",
    "domains:read": "Read domains",
    "domains:write": "Add, verify and delete domains",
    "webhooks": "Manage webhook endpoints",
    "contacts:read": "Read contacts",
    "contacts:write": "Change contacts",
    "calendar:read": "Read calendar events",
    "calendar:write": "Change calendar events",
}

PARTNER_SCOPES = {
    "partner:mailboxes:read": "List client mailboxes",
    "partner:mailboxes:write": "Create, delete and renew client mailboxes",
    "partner:domains:read": "List domains and check verification status",
    "partner:domains:write": "Add, verify and delete domains",
    "partner:addons:read": "Read add-on pricing and purchase status",
    "partner:addons:write": "Purchase domain-slot and storage add-ons",
    "partner:stats:read": "Read aggregate stats and the account summary",
    "partner:settings:write": "Change account-wide settings such as the default lapse action",
}

ALL_SCOPES = {**USER_SCOPES, **PARTNER_SCOPES}
DEFAULT_SCOPES = ["send"]


def is_partner_scope(scope: str) -> bool:
    return scope in PARTNER_SCOPES
