"""Scopes, plan gates and the account behind a request."""
from rest_framework import exceptions
from rest_framework.permissions import BasePermission

from mailcore.accounts.models import Account
from mailcore.accounts.selectors import plan_gate_message
from mailcore.partners.selectors import account_has_feature
from mailcore.apikeys.models import ApiKey


def request_account(request) -> Account:
    account = getattr(request.user, "account", None)
    if account is None:
        raise exceptions.PermissionDenied("This user does not belong to an account.")
    return account


def scope_required(request, scope: str) -> None:
    """API keys need the scope; people signed in with a session act with all their rights."""
    if isinstance(request.auth, ApiKey) and scope not in request.auth.scopes:
        raise exceptions.PermissionDenied(f"This API key lacks the '{scope}' scope.")


class HasScope(BasePermission):
    """Checks `view.required_scopes`: a scope for every method, or a dict by HTTP method."""

    def has_permission(self, request, view):
        required = getattr(view, "required_scopes", None)
        method = "GET" if request.method == "HEAD" else request.method  # HEAD is a GET without the body
        scope = required.get(method) if isinstance(required, dict) else required
        if scope:
            scope_required(request, scope)
        return True


class PlanFeature(BasePermission):
    """Checks `view.required_feature` against the account's plan; 403 names the plan that has it."""

    def has_permission(self, request, view):
        feature = getattr(view, "required_feature", None)
        if feature and not account_has_feature(account=request_account(request), feature=feature):
            raise exceptions.PermissionDenied(plan_gate_message(feature))
        return True
