"""Allowed and blocked senders: the owner's (per mailbox) and the partner's (per client domain).

The owner's rules are read first, then the domain's; within each, a rule for the address beats a
rule for its domain, and a rule for a subdomain beats one for its parent. An allow rule never opens
the door to a sender whose DMARC check failed (anyone can write someone else's From line)."""
from django.db.models import Q

from mailcore.mailboxes.models import Mailbox
from protection.models import SenderRule


def _domains(domain: str) -> list[str]:
    """example.co.uk, co.uk, uk: the domain and its parents, most specific first."""
    labels = domain.split(".")
    return [".".join(labels[index:]) for index in range(len(labels)) if labels[index:]]


def sender_listed(mailbox: Mailbox, *, sender: str, dmarc_passed: bool) -> str | None:
    """"allow", "block" or None for `sender` (an address). `dmarc_passed` is False when DMARC failed."""
    sender = (sender or "").strip().strip("<>").lower()
    if "@" not in sender:
        return None
    domains = _domains(sender.rpartition("@")[2])
    scope = Q(mailbox=mailbox) | Q(domain_id=mailbox.domain_id) if mailbox.domain_id else Q(mailbox=mailbox)
    rules = SenderRule.objects.filter(scope, sender__in=[sender, *domains])
    rules = rules.order_by().values_list("sender", "kind", "mailbox_id")
    owners, partners = [], []  # one query for both scopes; the owner's rules are read first
    for rule, kind, owner in rules:
        (owners if owner == mailbox.pk else partners).append((rule, kind))
    for found in (owners, partners):
        kinds = dict((rule.lower(), kind) for rule, kind in found)
        for candidate in [sender, *domains]:
            kind = kinds.get(candidate)
            if kind == SenderRule.Kind.BLOCK:
                return "block"
            if kind == SenderRule.Kind.ALLOW and dmarc_passed:
                return "allow"
    return None
