"""Who may use the DAV tree: HTTP Basic with a mailbox's address and password, throttled, then its plan's gate."""
import base64
import binascii

from django.conf import settings
from django.http import HttpResponse

from dav.responses import response
from dav.tree import FEATURE
from mailcore.accounts.selectors import plan_gate_message
from mailcore.ipnets import client_ip
from mailcore.mailboxes.models import Mailbox
from mailcore.mailboxes.passwords import mailbox_password_verify_repeated
from mailcore.throttle import MAILBOX_LOGIN, LoginThrottled, throttle_attempt, throttle_forgive, throttle_keys
from webmail.sessions import mailbox_of_partner

REALM = "Mailwell"


def _challenge() -> HttpResponse:
    return response("Sign in with your mailbox address and mailbox password.\n", status=401,
                    headers={"WWW-Authenticate": f'Basic realm="{REALM}", charset="UTF-8"'})


def _credentials(request) -> tuple[str, str] | None:
    scheme, _, value = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    address, colon, password = decoded.partition(":")
    return (address.strip(), password) if colon and address.strip() else None


def _partner_id(request) -> int | None:
    """The partner whose webmail hostname the request came in on (set by the webmail host middleware)."""
    brand = getattr(request, "webmail_brand", None)
    return getattr(brand, "partner_id", None)


def sign_in(request) -> Mailbox | HttpResponse:
    credentials = _credentials(request)
    if credentials is None:
        return _challenge()
    address, password = credentials
    keys = throttle_keys(MAILBOX_LOGIN, address, client_ip(request.META, settings.TRUSTED_PROXY_COUNT))
    try:
        throttle_attempt(keys)
    except LoginThrottled as exc:
        return response(f"{exc.detail}\n", status=429, headers={"Retry-After": str(exc.retry_after)})
    mailbox = (Mailbox.objects.select_related("plan", "account__plan")
               .filter(address__iexact=address, kind=Mailbox.Kind.MANAGED).first())
    ok = mailbox_password_verify_repeated(password, mailbox.password_hash if mailbox is not None else None)
    partner_id = _partner_id(request)
    if not ok or (partner_id is not None and not mailbox_of_partner(mailbox, partner_id)):
        return _challenge()
    throttle_forgive(keys)
    if not mailbox.is_active:
        return response("This mailbox is switched off.\n", status=403)
    return mailbox


def gate(mailbox: Mailbox, kind: str) -> HttpResponse | None:
    """403 naming the plan when the mailbox's plan lacks what this part of the tree serves."""
    plan = mailbox.effective_plan
    if kind in FEATURE:
        feature = FEATURE[kind]
        if not plan.has_feature(feature):
            return response(plan_gate_message(feature) + "\n", status=403)
    elif not (plan.has_feature("contacts") or plan.has_feature("calendar")):
        return response(plan_gate_message("contacts") + "\n", status=403)
    return None
