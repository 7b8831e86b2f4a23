"""The settings people change: a client domain's thresholds (its partner), an owner's stricter
filtering, and allowed and blocked senders of a mailbox (its owner) or of a client domain (its
partner). Pages and the API call these; the screening reads the rows (protection.policy, .lists)."""
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction

from mailcore.domains.models import Domain
from mailcore.domains.names import InvalidHostname, hostname_to_ascii
from mailcore.errors import InvalidFields
from mailcore.mailboxes.models import Mailbox
from protection.models import DomainPolicy, MailboxPolicy, SenderRule
from protection.selectors import domain_policy_get, mailbox_domain_junk_at

SCORE_MIN, SCORE_MAX = 0.0, 100.0
SENDER_RULES_MAX = 1000  # per mailbox or client domain: a list people read, not a feed


def sender_normalized(sender: str) -> str:
    """An address (`user@example.com`) or a domain (`example.com`, also given as `@example.com` or
    `*.example.com`), lowercased, the domain in its ASCII form; InvalidFields naming `sender` if neither."""
    text = (sender or "").strip().lower()
    if text.startswith("*."):
        text = text[2:]
    text = text.removeprefix("@")
    if not text:
        raise InvalidFields({"sender": "give an address (user@example.com) or a domain (example.com)"})
    try:
        if "@" in text:
            local, _, domain = text.rpartition("@")
            normalized = f"{local}@{hostname_to_ascii(domain, noun='domain')}"
            validate_email(normalized)
            return normalized
        return hostname_to_ascii(text, noun="domain")
    except (InvalidHostname, ValidationError):
        raise InvalidFields({"sender": f"{sender.strip()} is not an address (user@example.com) or a domain "
                                       "(example.com)"}) from None


def _rule_add(*, kind: str, sender: str, **scope) -> SenderRule:
    if kind not in SenderRule.Kind.values:
        raise InvalidFields({"kind": "must be allow or block"})
    normalized = sender_normalized(sender)
    rules = SenderRule.objects.filter(**scope)
    existing = rules.filter(sender=normalized).first()
    if existing is not None:
        if existing.kind == kind:
            return existing  # adding the same rule twice leaves one
        raise InvalidFields({"sender": f"{normalized} is already {'allowed' if existing.kind == 'allow' else 'blocked'}"
                                       "; remove that rule first"})
    if rules.count() >= SENDER_RULES_MAX:
        raise InvalidFields({"sender": f"at most {SENDER_RULES_MAX} senders per list"})
    try:
        with transaction.atomic():
            return SenderRule.objects.create(kind=kind, sender=normalized, **scope)
    except IntegrityError:  # the same sender added at the same moment
        return SenderRule.objects.get(sender=normalized, **scope)


def mailbox_sender_rule_add(*, mailbox: Mailbox, kind: str, sender: str) -> SenderRule:
    """The owner allows or blocks a sender for this mailbox (an allowed sender that fails DMARC is
    still not allowed: protection.lists)."""
    return _rule_add(kind=kind, sender=sender, mailbox=mailbox)


def domain_sender_rule_add(*, domain: Domain, kind: str, sender: str) -> SenderRule:
    """The partner allows or blocks a sender for every mailbox of a client domain."""
    return _rule_add(kind=kind, sender=sender, domain=domain)


def sender_rule_delete(*, rule: SenderRule) -> None:
    rule.delete()


def _score(name: str, value) -> float:
    try:
        score = float(value)
    except (TypeError, ValueError):
        raise InvalidFields({name: "must be a number"}) from None
    if not SCORE_MIN <= score <= SCORE_MAX:
        raise InvalidFields({name: f"must be between {SCORE_MIN:g} and {SCORE_MAX:g}"})
    return round(score, 1)


def domain_policy_set(*, domain: Domain, junk_at=None, quarantine_at=None, refuse_at=None,
                      greylist: bool | None = None) -> DomainPolicy:
    """A client domain's thresholds (those not given keep their value): junk_at <= quarantine_at <=
    refuse_at, else InvalidFields naming the field that breaks the order."""
    current = domain_policy_get(domain=domain)
    given = {"junk_at": junk_at, "quarantine_at": quarantine_at, "refuse_at": refuse_at}
    scores = {name: _score(name, value) if value is not None else getattr(current, name)
              for name, value in given.items()}
    errors = {}
    if scores["junk_at"] > scores["quarantine_at"]:
        errors["junk_at" if junk_at is not None else "quarantine_at"] = (
            f"the Junk threshold ({scores['junk_at']:g}) must not be above the quarantine threshold "
            f"({scores['quarantine_at']:g})")
    if scores["quarantine_at"] > scores["refuse_at"]:
        errors["quarantine_at" if quarantine_at is not None or refuse_at is None else "refuse_at"] = (
            f"the quarantine threshold ({scores['quarantine_at']:g}) must not be above the refusal threshold "
            f"({scores['refuse_at']:g})")
    if errors:
        raise InvalidFields(errors)
    policy, _ = DomainPolicy.objects.get_or_create(domain=domain)
    for name, score in scores.items():
        setattr(policy, name, score)
    if greylist is not None:
        policy.greylist = greylist
    policy.save()
    return policy


def domain_policy_reset(*, domain: Domain) -> DomainPolicy:
    """Back to the defaults."""
    DomainPolicy.objects.filter(domain=domain).delete()
    return domain_policy_get(domain=domain)


def mailbox_policy_set(*, mailbox: Mailbox, junk_at) -> MailboxPolicy:
    """The owner's own Junk threshold: only ever stricter (lower) than the domain's; None follows the domain's."""
    policy, _ = MailboxPolicy.objects.get_or_create(mailbox=mailbox)
    if junk_at is None:
        policy.junk_at = None
    else:
        score = _score("junk_at", junk_at)
        domain_junk_at = mailbox_domain_junk_at(mailbox=mailbox)
        if score > domain_junk_at:
            raise InvalidFields({"junk_at": f"can only be stricter than your provider's setting: at most "
                                            f"{domain_junk_at:g}"})
        policy.junk_at = score
    policy.save()
    return policy

