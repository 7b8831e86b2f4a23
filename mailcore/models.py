"""The mail domain's models, defined by concept in sub-packages and gathered here for Django."""
from mailcore.accounts.models import Account, HostingPartner, Plan, User
from mailcore.apikeys.models import ApiKey, ApiKeyDailyUsage, SessionToken
from mailcore.domains.models import Domain
from mailcore.events.models import Event
from mailcore.mailboxes.models import Alias, ForwardingRule, Label, Mailbox
from mailcore.partners.models import PartnerClient
from mailcore.store.models import StoredFolder, StoredMessage
from mailcore.usage.models import MailboxDailyUsage

__all__ = [
    "Account",
    "Alias",
    "ForwardingRule",
    "Label",
    "ApiKey",
    "ApiKeyDailyUsage",
    "Domain",
    "Event",
    "HostingPartner",
    "Mailbox",
    "MailboxDailyUsage",
    "PartnerClient",
    "Plan",
    "SessionToken",
    "StoredFolder",
    "StoredMessage",
    "User",
]
