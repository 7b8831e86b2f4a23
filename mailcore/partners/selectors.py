"""Reads for hosting partners, scoped to the partner; stats and summary in a fixed number of queries."""
from datetime import timedelta

from django.utils import timezone
from django.db.models import Count, F, Func, Q, QuerySet, Subquery

from mailcore.partners.models import HostingPartner
from mailcore.domains.dnscheck import public_record
from mailcore.domains.models import Domain
from mailcore.mailboxes.models import Alias, ForwardingRule
from mailcore.partners.models import MailboxSlot, PartnerClient, PartnerMailbox


def partner_domains(*, partner: HostingPartner) -> QuerySet[Domain]:
    return Domain.objects.filter(account=partner.account_id).order_by("name")


def partner_domain_get(*, partner: HostingPartner, domain_id: int) -> Domain:
    return Domain.objects.select_related("account__partner").get(account=partner.account_id, pk=domain_id)


def partner_clients(*, partner: HostingPartner) -> QuerySet[PartnerClient]:
    return PartnerClient.objects.filter(partner=partner).annotate(
        domain_count=Count("domains", distinct=True),
        mailbox_count=Count("domains__mailboxes", filter=Q(domains__mailboxes__partner_mailbox__isnull=False),
                            distinct=True),
    )


def partner_client_choices(*, partner: HostingPartner) -> QuerySet[PartnerClient]:
    """Id and name of each client, for a filter's choices (no per-client counts to join)."""
    return PartnerClient.objects.filter(partner=partner).only("id", "name")


def partner_domain_choices(*, partner: HostingPartner) -> QuerySet[Domain]:
    """Id and name of each domain, for a filter's choices (without the stored DNS check)."""
    return partner_domains(partner=partner).only("id", "name")


def partner_client_get(*, partner: HostingPartner, client_id: int) -> PartnerClient:
    return partner_clients(partner=partner).get(pk=client_id)


def partner_mailboxes(*, partner: HostingPartner, status: str | None = None, client_id: int | None = None,
                      domain_id: int | None = None, search: str = "") -> QuerySet[PartnerMailbox]:
    """Newest first (the index on partner, created_at, id serves a page without sorting them all);
    `search` matches part of the address, so a domain name finds its mailboxes."""
    rows = PartnerMailbox.objects.filter(partner=partner).select_related("mailbox__domain").order_by(
        "-created_at", "-id")
    if status:
        rows = rows.filter(status=status)
    if search:
        rows = rows.filter(mailbox__address__contains=search.strip().lower())  # addresses are stored lowercase
    if client_id:
        rows = rows.filter(mailbox__domain__client_id=client_id)
    if domain_id:
        rows = rows.filter(mailbox__domain_id=domain_id)
    return rows


def partner_mailboxes_ending_soon(*, partner: HostingPartner, within: timedelta, limit: int = 10
                                  ) -> list[PartnerMailbox]:
    """Running mailboxes whose term ends within `within` (or has just ended), soonest first."""
    from mailcore.partners.lifecycle import RUNNING

    return list(partner_mailboxes(partner=partner).filter(status__in=RUNNING,
                                                          expires_at__lte=timezone.now() + within)
                .select_related("mailbox__domain__client").order_by("expires_at")[:limit])


def partner_mailbox_get(*, partner: HostingPartner, mailbox_id: int) -> PartnerMailbox:
    return partner_mailboxes(partner=partner).select_related("mailbox__account", "mailbox__domain__client",
                                                             "partner__account").get(pk=mailbox_id)


def mailbox_aliases(*, partner_mailbox: PartnerMailbox) -> QuerySet[Alias]:
    return Alias.objects.filter(mailbox=partner_mailbox.mailbox)


def mailbox_forwarding_rules(*, partner_mailbox: PartnerMailbox) -> QuerySet[ForwardingRule]:
    return ForwardingRule.objects.filter(mailbox=partner_mailbox.mailbox)


def _counts(rows, field: str) -> dict[str, int]:
    return {row[field]: row["n"] for row in rows.values(field).annotate(n=Count("id")).order_by()}


def partner_stats(*, partner: HostingPartner) -> dict:
    """Five queries whatever the partner's size."""
    mailboxes = PartnerMailbox.objects.filter(partner=partner)
    by_status_and_plan = list(mailboxes.values("status", "plan_type").annotate(n=Count("id")).order_by())
    by_status: dict[str, int] = {}
    by_plan: dict[str, int] = {}
    for row in by_status_and_plan:
        by_status[row["status"]] = by_status.get(row["status"], 0) + row["n"]
        by_plan[row["plan_type"]] = by_plan.get(row["plan_type"], 0) + row["n"]
    slots = _counts(MailboxSlot.objects.filter(partner=partner), "status")
    domains = _counts(Domain.objects.filter(account=partner.account_id), "status")
    pending = Domain.objects.filter(account=partner.account_id).exclude(
        status=Domain.Status.VERIFIED).order_by("name").values("id", "name", "status", "dns_check")
    return {
        "mailboxes_total": sum(by_status.values()),
        "mailboxes_by_status": by_status,
        "mailboxes_by_plan": by_plan,
        "slots_unused": slots.get(MailboxSlot.Status.UNUSED, 0),
        "slots_assigned": slots.get(MailboxSlot.Status.ASSIGNED, 0),
        "slots_expired": slots.get(MailboxSlot.Status.EXPIRED, 0),
        "domains_total": sum(domains.values()),
        "domains_verified": domains.get(Domain.Status.VERIFIED, 0),
        "domains_pending": domains.get(Domain.Status.PENDING, 0),
        "domains_failed": domains.get(Domain.Status.FAILED, 0),
        "domain_limit": partner.domain_limit,
        "extra_storage_mb": partner.extra_storage_mb,
        "pending_domain_setup": [
            {"domain_id": row["id"], "domain_name": row["name"], "status": row["status"],
             "dns_records": [public_record(record) for record in row["dns_check"]] if row["dns_check"] else None}
            for row in pending
        ],
    }


def _count_of(rows: QuerySet) -> Subquery:
    """COUNT(*) of `rows` as a scalar subquery: counts of several tables in one query without joining
    them (a join would count clients times slots rows)."""
    return Subquery(rows.order_by().annotate(n=Func(F("id"), function="COUNT")).values("n"))


def partner_client_count(*, partner: HostingPartner) -> int:
    return PartnerClient.objects.filter(partner=partner).count()


def partner_summary(*, partner: HostingPartner) -> dict:
    """The account at a glance, in three queries."""
    stats = PartnerMailbox.objects.filter(partner=partner).aggregate(
        total=Count("id"), active=Count("id", filter=Q(status=PartnerMailbox.Status.ACTIVE)),
        trial=Count("id", filter=Q(status=PartnerMailbox.Status.TRIAL)))
    counts = HostingPartner.objects.filter(pk=partner.pk).values(
        n_clients=_count_of(PartnerClient.objects.filter(partner=partner)),
        n_slots_unused=_count_of(MailboxSlot.objects.filter(partner=partner, status=MailboxSlot.Status.UNUSED))).get()
    domains = Domain.objects.filter(account=partner.account_id).aggregate(
        total=Count("id"), verified=Count("id", filter=Q(status=Domain.Status.VERIFIED)))
    return {
        "account_name": partner.account.name,
        "status": partner.status,
        "trial_ends_at": partner.trial_ends_at,
        "default_client_lapse_action": partner.default_client_lapse_action,
        "clients_total": counts["n_clients"],
        "domains_total": domains["total"],
        "domains_verified": domains["verified"],
        "domain_limit": partner.domain_limit,
        "mailboxes_total": stats["total"],
        "mailboxes_active": stats["active"],
        "mailboxes_trial": stats["trial"],
        "slots_unused": counts["n_slots_unused"],
        "extra_storage_mb": partner.extra_storage_mb,
    }


# What a working hosting partner (trial or active) gets whatever its account plan: provisioning
# through /v1/hosting needs the partner_* and domain events (docs/decisions.md).
PARTNER_FEATURES = frozenset({"webhooks"})


def account_has_feature(*, account, feature: str) -> bool:
    """The one feature gate: the account's plan, and for a working hosting partner its partner features too."""
    return account.plan.has_feature(feature) or partner_grants_feature(account=account, feature=feature)


def partner_grants_feature(*, account, feature: str) -> bool:
    """Whether the account has the feature on any plan, as a working (trial or active) hosting partner."""
    partner = getattr(account, "partner", None)
    return feature in PARTNER_FEATURES and partner is not None and partner.is_operational
