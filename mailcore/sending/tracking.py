"""Open and click tracking: signed URLs, and the events a hit raises.

A token is signed with SECRET_KEY (django.core.signing), so a tampered or invented link fails
verification and answers 404: the click redirect can never send anyone to a URL we did not sign.
"""
from django.conf import settings
from django.core import signing
from django.utils import timezone

from mailcore.events.services import emit
from mailcore.outbound.feedback import SendOutcome, outcome_report

_OPEN_SALT = "mailwell.tracking.open"
_CLICK_SALT = "mailwell.tracking.click"


def _base(host: str | None) -> str:
    """The platform's address, or https://<host> for a domain's own tracking host (TLS on demand)."""
    return f"https://{host}" if host else settings.PUBLIC_BASE_URL.rstrip("/")


def open_url(message_id: str, *, host: str | None = None) -> str:
    return f"{_base(host)}/t/o/{signing.dumps(message_id, salt=_OPEN_SALT, compress=True)}.gif"


def click_url(message_id: str, url: str, *, host: str | None = None) -> str:
    return f"{_base(host)}/t/c/{signing.dumps([message_id, url], salt=_CLICK_SALT, compress=True)}"


class InvalidToken(Exception):
    pass


def _load(token: str, salt: str):
    try:
        return signing.loads(token, salt=salt)
    except signing.BadSignature:
        raise InvalidToken("unknown or tampered tracking link") from None


def _message(message_id: str):
    from mailcore.outbound.models import OutboundMessage

    message = OutboundMessage.objects.select_related("account").filter(message_id=message_id).first()
    if message is None:
        raise InvalidToken("the message behind this link no longer exists")
    return message


def mail_client_from(user_agent: str) -> str:
    """A readable mail client name from a User-Agent header."""
    agent = user_agent or ""
    known = [
        ("GoogleImageProxy", "Gmail"), ("YahooMailProxy", "Yahoo Mail"), ("Thunderbird", "Thunderbird"),
        ("Microsoft Outlook", "Outlook"), ("ms-office", "Outlook"), ("Outlook", "Outlook"),
        ("Apple Mail", "Apple Mail"), ("AppleWebKit", "Apple Mail" if "Mobile/" not in agent and "Safari" not in agent else "Safari"),
        ("Edg/", "Edge"), ("Firefox", "Firefox"), ("Chrome", "Chrome"), ("Safari", "Safari"),
    ]
    for needle, name in known:
        if needle in agent:
            return name
    return agent[:100] or "Unknown"


def country_of(ip: str) -> str:
    """Two-letter country code from a local GeoIP2 database (GEOIP_COUNTRY_DB), else "XX"."""
    path = settings.GEOIP_COUNTRY_DB
    if not path:
        return "XX"
    try:
        import geoip2.database
        import geoip2.errors

        with geoip2.database.Reader(path) as reader:
            return reader.country(ip).country.iso_code or "XX"
    except Exception:  # no database, a private address, or an address it does not know
        return "XX"


def tracking_open(*, token: str, client_ip: str, user_agent: str) -> None:
    message = _message(_load(token, _OPEN_SALT))
    emit(
        account=message.account,
        name="email.opened",
        data={
            "message_id": str(message.message_id),
            "opened_at": timezone.now().isoformat().replace("+00:00", "Z"),
            "location_country": country_of(client_ip),
            "client": mail_client_from(user_agent),
        },
        sandbox=message.sandbox,
    )
    outcome_report(SendOutcome(message, "opened"))


def tracking_click(*, token: str) -> str:
    """Record the click and return the URL that was signed into the link."""
    message_id, url = _load(token, _CLICK_SALT)
    message = _message(message_id)
    emit(
        account=message.account,
        name="email.clicked",
        data={"message_id": str(message.message_id), "url": url,
              "clicked_at": timezone.now().isoformat().replace("+00:00", "Z")},
        sandbox=message.sandbox,
    )
    outcome_report(SendOutcome(message, "clicked", detail=url))
    return url
