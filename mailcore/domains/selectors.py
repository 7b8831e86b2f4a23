"""Reads of an account's own domains, scoped to the account (another account's domain does not exist)."""
from django.db.models import QuerySet

from mailcore.accounts.models import Account
from mailcore.domains.models import Domain


def account_domains(*, account: Account) -> QuerySet[Domain]:
    return Domain.objects.filter(account=account).order_by("name", "pk")


def account_domain_get(*, account: Account, domain_id: int) -> Domain:
    return account_domains(account=account).get(pk=domain_id)
