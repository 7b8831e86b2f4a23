"""Writes and checks for API keys: create, update, revoke, authenticate."""
from datetime import datetime

from django.db import IntegrityError, transaction
from django.utils import timezone

from mailcore.accounts.models import Account, User
from mailcore.apikeys import usage
from mailcore.apikeys.models import ApiKey
from mailcore.apikeys.scopes import ALL_SCOPES, DEFAULT_SCOPES, is_partner_scope
from mailcore.credentials import credential_new, digest_matches, prefix_of
from mailcore.errors import DomainError, ErrorCode, InvalidFields
from mailcore.ipnets import ip_in_list, normalise_ip_list

API_KEY_KIND = "mk"


class CredentialRejected(DomainError):
    """A request's credential was refused: unknown, wrong, expired or revoked."""

    code = ErrorCode.UNAUTHORIZED


class AddressDenied(CredentialRejected):
    """A good key used from an address its lists refuse."""

    code = ErrorCode.FORBIDDEN


def _clean_ip_lists(fields: dict) -> dict:
    errors, cleaned = {}, {}
    for field, entries in fields.items():
        try:
            normalised = normalise_ip_list(entries)
        except ValueError as exc:
            errors[field] = [str(exc)]
            continue
        cleaned[field] = normalised or None  # [] clears the list: any address
    if errors:
        raise InvalidFields(errors)
    return cleaned


def _clean_scopes(account: Account, scopes: list[str] | None) -> list[str]:
    scopes = list(DEFAULT_SCOPES if scopes is None else scopes)
    unknown = [scope for scope in scopes if scope not in ALL_SCOPES]
    if unknown:
        raise InvalidFields({"scopes": [f"unknown scope {scope!r}" for scope in unknown]})
    if not scopes:
        raise InvalidFields({"scopes": ["give at least one scope"]})
    if any(is_partner_scope(scope) for scope in scopes) and not hasattr(account, "partner"):
        raise InvalidFields({"scopes": ["partner scopes need a hosting partner account"]})
    return sorted(set(scopes), key=scopes.index)


def api_key_create(
    *,
    account: Account,
    created_by: User | None,
    name: str,
    scopes: list[str] | None = None,
    expires_at: datetime | None = None,
    allowed_ips: list[str] | None = None,
    blocked_ips: list[str] | None = None,
) -> tuple[ApiKey, str]:
    """Create a key and return it with its raw value, which is never shown again."""
    if not name.strip():
        raise InvalidFields({"name": ["name must not be blank"]})
    if expires_at is not None and expires_at <= timezone.now():
        raise InvalidFields({"expires_at": ["expires_at must be in the future"]})
    clean_scopes = _clean_scopes(account, scopes)
    ip_lists = _clean_ip_lists({"allowed_ips": allowed_ips, "blocked_ips": blocked_ips})
    for _ in range(5):
        credential = credential_new(API_KEY_KIND)
        try:
            with transaction.atomic():
                key = ApiKey.objects.create(
                    account=account,
                    created_by=created_by,
                    name=name.strip(),
                    key_prefix=credential.prefix,
                    key_digest=credential.digest,
                    scopes=clean_scopes,
                    expires_at=expires_at,
                    **ip_lists,
                )
            return key, credential.raw
        except IntegrityError:  # a prefix collision: vanishingly rare, try another
            continue
    raise RuntimeError("could not allocate a unique API key prefix")


_UNSET = object()


def api_key_update(*, key: ApiKey, allowed_ips=_UNSET, blocked_ips=_UNSET, is_active=_UNSET) -> ApiKey:
    """Only the address lists and revocation can change; a revoked key stays revoked."""
    changes = _clean_ip_lists(
        {field: value for field, value in (("allowed_ips", allowed_ips), ("blocked_ips", blocked_ips)) if value is not _UNSET}
    )
    if is_active is not _UNSET:
        if is_active and not key.is_active:
            raise InvalidFields({"is_active": ["a revoked key cannot be reactivated; create a new key"]})
        changes["is_active"] = bool(is_active)
    for field, value in changes.items():
        setattr(key, field, value)
    if changes:
        key.save(update_fields=list(changes))
    return key


def api_key_revoke(*, key: ApiKey) -> ApiKey:
    if key.is_active:
        key.is_active = False
        key.save(update_fields=["is_active"])
    return key


def api_key_authenticate(*, raw: str, client_ip: str) -> ApiKey:
    """The active key behind a raw value, if the client's address may use it; counts the use."""
    prefix = prefix_of(raw, API_KEY_KIND)
    key = None
    if prefix is not None:
        try:  # get(), not first(): a unique lookup needs no ORDER BY (compiling one costs as much as the query)
            key = ApiKey.objects.select_related("account__plan", "account__partner").get(key_prefix=prefix)
        except ApiKey.DoesNotExist:
            pass
    if key is None or not digest_matches(raw, key.key_digest):
        raise CredentialRejected("Invalid API key.")
    if not key.is_active:
        raise CredentialRejected("This API key has been revoked.")
    if key.is_expired():
        raise CredentialRejected("This API key has expired.")
    if key.blocked_ips and ip_in_list(client_ip, key.blocked_ips):
        raise AddressDenied(f"Requests from {client_ip} are blocked for this API key.")
    if key.allowed_ips and not ip_in_list(client_ip, key.allowed_ips):
        raise AddressDenied(f"Requests from {client_ip} are not in this API key's allowlist.")
    usage.usage_record(key.pk)
    return key
