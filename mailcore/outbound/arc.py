"""ARC (RFC 8617) on mail we forward, with dkimpy's arc_sign: the forward carries our screener's
Authentication-Results as ARC-Authentication-Results, an ARC-Message-Signature and an ARC-Seal,
signed with the forwarding domain's DKIM key, so the next hop can trust results a changed message
(a mailing list's footer, our own trace headers) no longer lets it check itself.

A set is added only when the message carries an Authentication-Results of ours (MAIL_HOST as its
authserv-id): mail that was not screened is forwarded without one, since we would seal results we
never checked (docs/decisions.md). The chain's cv= comes from our screener's `arc=` result.
"""
import logging

import dkim
from django.conf import settings

from mailcore.domains.dkim import dkim_key_for

log = logging.getLogger(__name__)


def arc_seal(raw: bytes, *, domain_name: str) -> bytes:
    """The message with a new ARC set on top, or unchanged when there is nothing of ours to seal or
    the set cannot be made (a forward is never lost to its seal)."""
    key = dkim_key_for(domain_name)
    try:
        arc_set = dkim.arc_sign(raw, key.selector.encode(), domain_name.lower().encode(),
                                key.private_key_pem.encode(), settings.MAIL_HOST.encode())
    except Exception:  # dkimpy raises its own errors and others on malformed mail
        log.warning("no ARC set on mail forwarded from %s", domain_name, exc_info=True)
        return raw
    return b"".join(arc_set) + raw
