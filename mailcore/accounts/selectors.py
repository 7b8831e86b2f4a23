"""Reads about accounts and plans."""
from django.db import models

from mailcore.accounts.models import Account, Plan


def plan_cheapest_with(feature: str) -> Plan | None:
    """The cheapest plan that has a feature, to name it in a 403."""
    if feature not in Plan.FEATURES:
        raise KeyError(f"unknown plan feature {feature!r}")
    return Plan.objects.filter(**{feature: True}).order_by("rank").first()


def plan_gate_message(feature: str) -> str:
    plan = plan_cheapest_with(feature)
    label = Plan.FEATURES[feature]
    if plan is None:
        return f"{label} is not available on any plan."
    richer = " or a higher plan" if Plan.objects.filter(rank__gt=plan.rank).exists() else ""
    return f"{label} needs the {plan.name} plan{richer}; your plan does not include it."


def _count_of(rows: models.QuerySet) -> models.Subquery:
    """COUNT(*) of rows as a scalar subquery."""
    return models.Subquery(rows.order_by().annotate(n=models.Func(models.F("pk"), function="COUNT")).values("n"))


def account_overview(*, account: Account) -> dict[str, int]:
    """Counts for the dashboard, in one query. Each count is its own subquery, read from its own
    index: joining the three tables instead multiplies them (mailboxes x domains x keys rows, ten
    million for a partner with 10,000 mailboxes)."""
    row = Account.objects.filter(pk=account.pk).values(
        n_mailboxes=_count_of(account.mailboxes.all()),
        n_domains=_count_of(account.domains.all()),
        n_api_keys=_count_of(account.api_keys.filter(is_active=True)),
    ).get()
    return {"mailboxes": row["n_mailboxes"], "domains": row["n_domains"], "api_keys": row["n_api_keys"]}
