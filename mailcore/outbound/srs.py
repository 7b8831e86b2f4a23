"""The Sender Rewriting Scheme (SRS) for mail we forward, with srslib (libsrs2's Guarded scheme).

A forward leaves with the envelope sender rewritten onto the forwarding domain
(`SRS0=<hash>=<day>=<sender's domain>=<sender's local part>@<forwarding domain>`), so the next hop's
SPF check is of a domain whose SPF allows us, and a bounce comes back to us: the listener reverses
the address (hash and timestamp checked) and hands the bounce to the original sender. A sender
that is already an SRS address of another forwarder becomes SRS1, which bounces to that forwarder.

The secret is SRS_SECRET, else one derived from SECRET_KEY; SRS_OLD_SECRETS (and the secrets
derived from SECRET_KEY_FALLBACKS) are still accepted, so a rotation breaks no bounce in flight.
"""
import srslib
from django.conf import settings
from django.utils.crypto import salted_hmac

SECRET_LABEL = "mailwell.outbound.srs"
PREFIXES = ("srs0=", "srs1=")  # the only separator we write; Postfix's map lets these through


class SrsInvalid(ValueError):
    """Not an SRS address we made, or one whose hash does not check or whose days are over."""


def _derived(secret_key: str) -> str:
    return salted_hmac(SECRET_LABEL, "srs", secret=secret_key, algorithm="sha256").hexdigest()


def _scheme() -> srslib.SRS:
    """Built per call (cheap): settings are read as they are now, tests and rotations included."""
    current = settings.SRS_SECRET or _derived(settings.SECRET_KEY)
    older = [*settings.SRS_OLD_SECRETS, *map(_derived, settings.SECRET_KEY_FALLBACKS)]
    if settings.SRS_SECRET:  # the default before SRS_SECRET was set stays valid too
        older.append(_derived(settings.SECRET_KEY))
    return srslib.SRS(current, prev_secrets=older, validity_days=settings.SRS_VALIDITY_DAYS)


def is_srs_address(address: str) -> bool:
    return address.lower().startswith(PREFIXES) and "@" in address


def srs_forward(envelope_from: str, forwarding_domain: str) -> str:
    """The envelope sender a forward from `forwarding_domain` leaves with. The null sender stays
    null (a bounce is never bounced); so does a sender without a domain, which nothing can answer."""
    if "@" not in envelope_from or not envelope_from.rpartition("@")[0]:
        return ""
    return _scheme().forward(envelope_from, forwarding_domain.lower())


def srs_reverse(address: str) -> str:
    """Where a bounce to this SRS address goes: the original sender (SRS0), or the first
    forwarder's SRS0 address (SRS1). Raises SrsInvalid for anything forged, tampered or expired."""
    if not is_srs_address(address):
        raise SrsInvalid(f"not an SRS address: {address!r}")
    try:
        original = _scheme().reverse(address)
    except srslib.Error as error:
        raise SrsInvalid(str(error)) from None
    local_part, at, domain = original.rpartition("@")
    if not (local_part and at and domain) or any(char.isspace() or char in "<>" for char in original):
        raise SrsInvalid(f"the SRS address names no usable sender: {address!r}")
    return original
