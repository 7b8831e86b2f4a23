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


def account_overview(*, account: Account) -> dict[str, int]:
    """Counts for the dashboard, in one query."""
    row = (
        Account.objects.filter(pk=account.pk)
        .annotate(
            n_mailboxes=models.Count("mailboxes", distinct=True),
            n_domains=models.Count("domains", distinct=True),
            n_api_keys=models.Count("api_keys", distinct=True, filter=models.Q(api_keys__is_active=True)),
        )
        .values("n_mailboxes", "n_domains", "n_api_keys")
        .get()
    )
    return {"mailboxes": row["n_mailboxes"], "domains": row["n_domains"], "api_keys": row["n_api_keys"]}
