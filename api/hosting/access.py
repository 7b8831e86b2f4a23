"""Access to /v1/hosting: an approved hosting partner in trial or active, and the partner scopes."""
from rest_framework import exceptions
from rest_framework.permissions import BasePermission
from rest_framework.views import APIView

from api.permissions import request_account
from mailcore.partners.models import HostingPartner


def request_partner(request) -> HostingPartner:
    partner = getattr(request_account(request), "partner", None)
    if partner is None:
        raise exceptions.PermissionDenied("This account is not a hosting partner; apply to become one first.")
    if not partner.is_operational:
        raise exceptions.PermissionDenied(_why_not_operational(partner))
    return partner


def _why_not_operational(partner: HostingPartner) -> str:
    if partner.status == HostingPartner.Status.EXPIRED and partner.trial_ends_at:
        return (f"The hosting account's trial ended on {partner.trial_ends_at:%Y-%m-%d} without a slot pool purchase; "
                "buy one in the portal (/portal/billing/slots/) to reactivate it.")
    if partner.status == HostingPartner.Status.PENDING:
        return "The hosting partner application is still pending approval."
    if partner.status == HostingPartner.Status.REJECTED:
        return "The hosting partner application was declined."
    return f"The hosting account is {partner.status}; the hosting API needs an active or trial account."


class IsOperationalPartner(BasePermission):
    def has_permission(self, request, view):
        request_partner(request)
        return True


class HostingApi(APIView):
    """Base for /v1/hosting views: scopes by method in `required_scopes`, partner checked first."""

    def get_permissions(self):
        """Signed in first (401), then a working partner account (403), then scopes and plan gates."""
        authenticated, *others = super().get_permissions()
        return [authenticated, IsOperationalPartner(), *others]

    @property
    def partner(self) -> HostingPartner:
        return request_partner(self.request)
