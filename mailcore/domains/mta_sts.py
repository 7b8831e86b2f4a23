"""MTA-STS (RFC 8461) for hosted domains: the policy served at https://mta-sts.<domain>/.well-known/mta-sts.txt,
the id its `_mta-sts` TXT record names, and the partner's choice of mode.

The id is a digest of the policy text, so it changes exactly when the served policy does (a mode switch,
another MAIL_HOST or max_age): senders fetch the policy again only when the TXT record's id changes."""
import hashlib

from django.conf import settings

from mailcore.domains.models import Domain
from mailcore.errors import InvalidFields

MTA_STS_LABEL = "mta-sts"  # the policy host under each domain (a CNAME to WEBMAIL_HOST)
POLICY_PATH = "/.well-known/mta-sts.txt"
POLICY_CONTENT_TYPE = "text/plain; charset=utf-8"
MODES = tuple(Domain.MtaStsMode.values)


def mta_sts_policy(domain: Domain) -> str:
    """The policy file: CRLF lines, mail accepted only at MAIL_HOST, which our certificate names."""
    lines = ["version: STSv1", f"mode: {domain.mta_sts_mode}", f"mx: {settings.MAIL_HOST}",
             f"max_age: {settings.MTA_STS_MAX_AGE_SECONDS}"]
    return "\r\n".join(lines) + "\r\n"


def mta_sts_policy_id(domain: Domain) -> str:
    """RFC 8461's id (1 to 32 letters or digits) for the policy served now."""
    return hashlib.sha256(mta_sts_policy(domain).encode()).hexdigest()[:20]


def mta_sts_record_value(domain: Domain) -> str:
    return f"v=STSv1; id={mta_sts_policy_id(domain)}"


def domain_mta_sts_mode_set(*, domain: Domain, mode: str) -> Domain:
    """Switch the served policy's mode; the `_mta-sts` record's id must then be updated in DNS."""
    if mode not in MODES:
        raise InvalidFields({"mode": [f"must be one of {', '.join(MODES)}"]})
    if domain.mta_sts_mode != mode:
        domain.mta_sts_mode = mode
        domain.save(update_fields=["mta_sts_mode"])
    return domain
