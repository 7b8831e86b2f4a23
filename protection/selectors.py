"""Reading protection's settings for pages and the API; callers scope the mailbox or domain first
(the owner's own mailbox, a partner's domain)."""
from django.db.models import QuerySet

from mailcore.domains.models import Domain
from mailcore.mailboxes.models import Mailbox
from protection.models import JUNK_AT, DomainPolicy, MailboxPolicy, SenderRule


def domain_policy_get(*, domain: Domain) -> DomainPolicy:
    """The domain's thresholds: its row, or an unsaved one holding the defaults."""
    return DomainPolicy.objects.filter(domain=domain).first() or DomainPolicy(domain=domain)


def mailbox_policy_get(*, mailbox: Mailbox) -> MailboxPolicy:
    return MailboxPolicy.objects.filter(mailbox=mailbox).first() or MailboxPolicy(mailbox=mailbox)


def mailbox_domain_junk_at(*, mailbox: Mailbox) -> float:
    """The Junk threshold the mailbox's domain sets, the most an owner can choose."""
    return domain_policy_get(domain=mailbox.domain).junk_at if mailbox.domain_id else JUNK_AT


def mailbox_sender_rules(*, mailbox: Mailbox) -> QuerySet[SenderRule]:
    return SenderRule.objects.filter(mailbox=mailbox)


def domain_sender_rules(*, domain: Domain) -> QuerySet[SenderRule]:
    return SenderRule.objects.filter(domain=domain)
