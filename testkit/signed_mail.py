"""Checking mail we originate as a receiver would: its DKIM signature verified by dkimpy against the
key published on the loopback DNS (the `dns_zone` fixture), and aligned (d= is the From domain)."""
import email
import email.policy
from email.utils import parseaddr

import dkim

from mailcore.dnslookup import dkim_dnsfunc
from mailcore.domains.dkim import dkim_key_for, dkim_public_record


def publish_dkim(zone, domain_name: str) -> None:
    """The domain's DKIM record on the loopback DNS, as its owner publishes it."""
    key = dkim_key_for(domain_name)
    zone.set(f"{key.selector}._domainkey.{domain_name}", "TXT", dkim_public_record(key))


def signature_tags(raw: bytes) -> dict[str, str]:
    message = email.message_from_bytes(raw, policy=email.policy.compat32)
    value = "".join(str(message["DKIM-Signature"] or "").split())
    return dict(part.split("=", 1) for part in value.split(";") if "=" in part)


def signed_and_aligned(raw: bytes, zone) -> email.message.EmailMessage:
    """The message parsed, once its signature verified over DNS and its d= is its From domain."""
    message = email.message_from_bytes(raw, policy=email.policy.default)
    from_domain = parseaddr(str(message["From"]))[1].rpartition("@")[2].lower()
    tags = signature_tags(raw)
    assert tags.get("d") == from_domain, (tags.get("d"), from_domain)
    publish_dkim(zone, from_domain)
    assert dkim.verify(raw, dnsfunc=dkim_dnsfunc), "the DKIM signature does not verify"
    return message
