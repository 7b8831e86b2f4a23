"""The platform's own sending domain (SYSTEM_MAIL_DOMAIN) as receivers check it: the records a
domain needs for the mail it sends to be trusted (SPF, DKIM, DMARC), built and checked by the same
code as customers' domains (mailcore.domains.dnscheck), so the operator publishes them alike."""
from django.conf import settings

from mailcore.domains.dnscheck import DnsRecord, check_records, expected_records
from mailcore.domains.models import Domain


def _sending(records: list[DnsRecord]) -> list[DnsRecord]:
    """Sending's records only: the platform's domain receives no mail here and claims nothing, so
    its DMARC record names no report address of ours (dmarc-reports@ exists on hosted domains only)."""
    sending = [record for record in records if record.key in ("spf", "dmarc") or record.key.startswith("dkim")]
    for record in sending:
        if record.key == "dmarc":
            record.value = "v=DMARC1; p=none"
            record.description = ("Protects the platform's domain against spoofing; add rua=mailto:<an address "
                                  "you read> for receivers' reports, and p=quarantine once they show only our servers")
    return sending


def _platform_domain() -> Domain:
    """Never saved: the record builders and checks read only its name (no row, no token)."""
    return Domain(name=settings.SYSTEM_MAIL_DOMAIN)


def system_domain_records() -> list[DnsRecord]:
    """What to publish for SYSTEM_MAIL_DOMAIN (its DKIM key is made on first use)."""
    return _sending(expected_records(_platform_domain()))


def system_domain_check() -> list[DnsRecord]:
    """The same records, each looked up now: ok, what was found, and why not."""
    return _sending(check_records(_platform_domain()))
