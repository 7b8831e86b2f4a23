"""Writes for domains."""
import secrets

from django.utils import timezone

from mailcore.accounts.models import Account
from mailcore.domains.models import Domain
from mailcore.partners.models import PartnerClient


def domain_create(*, account: Account, name: str, client: PartnerClient | None = None) -> Domain:
    return Domain.objects.create(
        account=account, client=client, name=name.lower(), verification_token=secrets.token_hex(16)
    )


def domain_mark_verified(*, domain: Domain) -> Domain:
    if not domain.is_verified:
        domain.status = Domain.Status.VERIFIED
        domain.verified_at = timezone.now()
        domain.save(update_fields=["status", "verified_at"])
    return domain
