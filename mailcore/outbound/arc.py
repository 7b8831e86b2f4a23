"""ARC (RFC 8617) on mail we forward, with dkimpy's arc_sign: the forward carries our screener's
Authentication-Results as ARC-Authentication-Results, an ARC-Message-Signature and an ARC-Seal,
signed with the forwarding domain's DKIM key, so the next hop can trust results a changed message
(a mailing list's footer, our own trace headers) no longer lets it check itself.

A set is added only when the message carries an Authentication-Results of ours (MAIL_HOST as its
authserv-id): mail that was not screened is forwarded without one, since we would seal results we
never checked (docs/decisions.md). The chain's cv= comes from our screener's `arc=` result; one
that is neither pass, fail nor none (a DNS failure) gets no set, which would end the chain as
failed, and leaves the earlier chain for the next hop to judge.
"""
import logging
import re

import dkim
from django.conf import settings

from mailcore.domains.dkim import dkim_key_for
from mailcore.store.authresults import HEADER as AUTHENTICATION_RESULTS
from mailcore.store.authresults import authentication_summary
from mailcore.store.reading import header_values_in

log = logging.getLogger(__name__)

CHAIN_VERDICTS = {"pass", "fail", "none"}  # the cv= values RFC 8617 allows
_BLANK_LINE = re.compile(rb"\r?\n\r?\n")


def arc_seal(raw: bytes, *, domain_name: str) -> bytes:
    """The message with a new ARC set on top, or unchanged when there is nothing of ours to seal or
    the set cannot be made (a forward is never lost to its seal)."""
    blank = _BLANK_LINE.search(raw)
    ours = authentication_summary(header_values_in(raw[:blank.start()] if blank else raw, AUTHENTICATION_RESULTS))
    if ours is None or ours.get("arc", "none") not in CHAIN_VERDICTS:
        return raw
    key = dkim_key_for(domain_name)
    try:
        arc_set = dkim.arc_sign(raw, key.selector.encode(), domain_name.lower().encode(),
                                key.private_key_pem.encode(), settings.MAIL_HOST.encode())
    except Exception:  # dkimpy raises its own errors and others on malformed mail
        log.warning("no ARC set on mail forwarded from %s", domain_name, exc_info=True)
        return raw
    return b"".join(arc_set) + raw
