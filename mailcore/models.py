"""The mail domain's models, defined by concept in sub-packages and gathered here for Django."""
from mailcore.accounts.models import Account, Plan, User
from mailcore.partners.models import HostingPartner
from mailcore.apikeys.models import ApiKey, ApiKeyDailyUsage, SessionToken
from mailcore.domains.models import DkimKey, Domain
from mailcore.events.models import Event
from mailcore.inbound.models import ThreadIndex
from mailcore.mailboxes.models import Alias, ConnectionVerification, ForwardingRule, Label, Mailbox
from mailcore.partners.models import MailboxSlot, PartnerClient, PartnerMailbox
from mailcore.store.models import StoredFolder, StoredMessage
from mailcore.sending.models import MailTemplate, SendFailure
from mailcore.outbound.models import OutboundMessage
from mailcore.usage.models import MailboxDailyUsage, MailboxHourlySends
from mailcore.events.models import WebhookDelivery, WebhookEndpoint
from mailcore.rules.models import MailFilter, SieveScript, VacationAnswer, VacationReply

__all__ = [
    "Account",
    "Alias",
    "ForwardingRule",
    "Label",
    "ApiKey",
    "ApiKeyDailyUsage",
    "DkimKey",
    "Domain",
    "Event",
    "HostingPartner",
    "ConnectionVerification",
    "Mailbox",
    "MailboxDailyUsage",
    "MailboxHourlySends",
    "MailTemplate",
    "SendFailure",
    "OutboundMessage",
    "MailboxSlot",
    "PartnerClient",
    "PartnerMailbox",
    "Plan",
    "SessionToken",
    "StoredFolder",
    "StoredMessage",
    "ThreadIndex",
    "User",
    "WebhookDelivery",
    "WebhookEndpoint",
    "MailFilter",
    "SieveScript",
    "VacationAnswer",
    "VacationReply",
]
