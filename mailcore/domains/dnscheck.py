"""The DNS records a hosted domain carries, and checking each one with a specific reason.

Verification needs only the MX record and the ownership token; SPF, DMARC, DKIM and the transport
security records (MTA-STS and its policy host, TLS-RPT) are checked and reported too, so a verified
domain can still show what to fix. While a DKIM key rotation runs (mailcore.domains.rotation) the
domain carries one more DKIM record: the new key, then the old one to keep for a week, then the old
one that may be removed.
"""
from dataclasses import asdict, dataclass
from enum import StrEnum

from django.conf import settings

from mailcore.dnslookup import lookup
from mailcore.domains.dkim import dkim_key_for, dkim_public_record
from mailcore.domains.models import TRACKING_LABEL, DkimKey, Domain
from mailcore.domains.mta_sts import MTA_STS_LABEL, mta_sts_record_value
from mailcore.domains.report_addresses import dmarc_report_address, tls_report_address


def verify_prefixes() -> list[str]:
    """The ownership record's current name first, then earlier ones that still verify."""
    return [settings.DOMAIN_VERIFY_PREFIX, *settings.DOMAIN_VERIFY_LEGACY_PREFIXES]


class DnsProblem(StrEnum):
    """What is wrong with a record: the code interfaces decide on; the words come from `reason_text`."""

    NO_MX = "no_mx"
    MX_ELSEWHERE = "mx_elsewhere"
    NO_TOKEN = "no_token"
    TOKEN_MISMATCH = "token_mismatch"
    NO_SPF = "no_spf"
    TWO_SPF = "two_spf"
    SPF_LACKS_RELAY = "spf_lacks_relay"
    NO_DMARC = "no_dmarc"
    TWO_DMARC = "two_dmarc"
    DMARC_NO_POLICY = "dmarc_no_policy"
    NO_DKIM = "no_dkim"
    DKIM_MISMATCH = "dkim_mismatch"
    NO_TRACKING_HOST = "no_tracking_host"
    TRACKING_HOST_ELSEWHERE = "tracking_host_elsewhere"
    NO_MTA_STS = "no_mta_sts"
    TWO_MTA_STS = "two_mta_sts"
    MTA_STS_OLD_ID = "mta_sts_old_id"
    NO_MTA_STS_HOST = "no_mta_sts_host"
    MTA_STS_HOST_ELSEWHERE = "mta_sts_host_elsewhere"
    NO_TLSRPT = "no_tlsrpt"
    TWO_TLSRPT = "two_tlsrpt"
    TLSRPT_ELSEWHERE = "tlsrpt_elsewhere"


def reason_text(problem: DnsProblem, *, found_hosts: str = "", found: str = "") -> str:
    """The API's `reason` for a problem, in words."""
    return {
        DnsProblem.NO_MX: "no MX record",
        DnsProblem.MX_ELSEWHERE: f"MX points to {found_hosts}, expected {_norm(settings.MAIL_HOST)}",
        DnsProblem.NO_TOKEN: "no verification TXT record",
        DnsProblem.TOKEN_MISMATCH: "the verification token does not match",
        DnsProblem.NO_SPF: "no SPF record",
        DnsProblem.TWO_SPF: "two SPF records; merge them into one",
        DnsProblem.SPF_LACKS_RELAY: f"SPF lacks {spf_include()}",
        DnsProblem.NO_DMARC: "no DMARC record",
        DnsProblem.TWO_DMARC: "two DMARC records",
        DnsProblem.DMARC_NO_POLICY: "DMARC record has no policy (p=)",
        DnsProblem.NO_DKIM: "no DKIM record",
        DnsProblem.DKIM_MISMATCH: "DKIM key does not match",
        DnsProblem.NO_TRACKING_HOST: "optional, not published: tracked links use the platform's host",
        DnsProblem.TRACKING_HOST_ELSEWHERE: f"points to {found}, expected {settings.TRACKING_HOST}: tracked links "
                                            "use the platform's host",
        DnsProblem.NO_MTA_STS: "no MTA-STS record",
        DnsProblem.TWO_MTA_STS: "two MTA-STS records",
        DnsProblem.MTA_STS_OLD_ID: "the MTA-STS id is not the current policy's",
        DnsProblem.NO_MTA_STS_HOST: f"no CNAME for the MTA-STS policy host; expected {settings.WEBMAIL_HOST}",
        DnsProblem.MTA_STS_HOST_ELSEWHERE: f"the MTA-STS policy host points to {found_hosts}, expected "
                                           f"{settings.WEBMAIL_HOST}",
        DnsProblem.NO_TLSRPT: "no TLS-RPT record",
        DnsProblem.TWO_TLSRPT: "two TLS-RPT records",
        DnsProblem.TLSRPT_ELSEWHERE: "the TLS-RPT record does not send reports to our address",
    }[problem]


def spf_include() -> str:
    return f"include:{settings.RELAY_HOST}".lower()


@dataclass
class DnsRecord:
    key: str  # mx, ownership, spf, dmarc, dkim (and the rotation's: see dkim_records), mta_sts, mta_sts_host, tlsrpt, tracking
    type: str
    host: str
    value: str
    description: str
    ok: bool | None = None
    found_value: str | None = None
    reason: str | None = None
    problem: DnsProblem | None = None
    optional: bool = False  # not needed for "every record right" (the domain's own tracking host)

    def fail(self, problem: DnsProblem, **details) -> None:
        self.ok, self.problem, self.reason = False, problem, reason_text(problem, **details)

    def stored(self) -> dict:
        """The record as the domain keeps it: the public fields plus its key and problem code."""
        return asdict(self)

    def public(self) -> dict:
        return public_record(self.stored())


PUBLIC_FIELDS = ("type", "host", "value", "description", "ok", "found_value", "reason")


def public_record(stored: dict) -> dict:
    """A stored record as the API shows it: the spec's fields only (key and problem stay inside)."""
    return {name: stored.get(name) for name in PUBLIC_FIELDS}


# How many records expected_records lists (a verified domain's list counts them without building them).
CHECKED_RECORD_COUNT = 8


def expected_records(domain: Domain) -> list[DnsRecord]:
    return [
        DnsRecord("mx", "MX", "@", f"10 {settings.MAIL_HOST}", "Routes incoming mail to our mail servers"),
        DnsRecord("ownership", "TXT", "@", f"{settings.DOMAIN_VERIFY_PREFIX}={domain.verification_token}",
                  "Proves you control this domain's DNS"),
        DnsRecord("spf", "TXT", "@", f"v=spf1 mx include:{settings.RELAY_HOST} ~all",
                  "Authorizes us to send mail for the domain"),
        DnsRecord("dmarc", "TXT", "_dmarc", f"v=DMARC1; p=none; rua=mailto:{dmarc_report_address(domain.name)}",
                  "Protects the domain against spoofing"),
        *dkim_records(domain),
        *transport_security_records(domain),
        DnsRecord("tracking", "CNAME", TRACKING_LABEL, settings.TRACKING_HOST,
                  "Optional: the domain's own host for open and click tracking in its mail", optional=True),
    ]


def transport_security_records(domain: Domain) -> list[DnsRecord]:
    """MTA-STS (its id, and the policy host served by us) and TLS-RPT: advisory, never needed to verify."""
    return [
        DnsRecord("mta_sts", "TXT", "_mta-sts", mta_sts_record_value(domain),
                  "Tells sending servers to deliver the domain's mail only over verified TLS (MTA-STS)"),
        DnsRecord("mta_sts_host", "CNAME", MTA_STS_LABEL, settings.WEBMAIL_HOST,
                  "Lets us serve the domain's MTA-STS policy over HTTPS"),
        DnsRecord("tlsrpt", "TXT", "_smtp._tls", f"v=TLSRPTv1; rua=mailto:{tls_report_address(domain.name)}",
                  "Sends receivers' reports of TLS failures to us (TLS-RPT)"),
    ]


# A DKIM record's key: "dkim" (RSA) or "dkim_ed25519", then "_next" for a key waiting to be seen in
# DNS, "_previous" for one no longer signing (kept for a week), "_removable" once it is retired.
TRANSITIONAL_SUFFIXES = ("_next", "_previous", "_removable")


def dkim_records(domain: Domain) -> list[DnsRecord]:
    """The domain's DKIM records to publish now: each algorithm's signing key, a rotation's new key,
    and an old key to keep (until its date) or that may be removed."""
    dkim_key_for(domain.name)  # the first RSA key, generated on first use of the name
    keys = DkimKey.objects.filter(domain_name=domain.name.lower()).exclude(state=DkimKey.State.RETIRED,
                                                                            shown_until__isnull=True)
    order = {DkimKey.State.ACTIVE: 0, DkimKey.State.PENDING: 1, DkimKey.State.RETIRING: 2, DkimKey.State.RETIRED: 3}
    keys = sorted(keys, key=lambda key: (key.algorithm != DkimKey.Algorithm.RSA, order[key.state], -key.pk))
    in_use = {key.selector for key in keys if key.state != DkimKey.State.RETIRED}
    records, seen = [], set()
    for key in keys:
        if key.state == DkimKey.State.RETIRED and key.selector in in_use:
            continue  # its selector holds a newer key now: that record replaced this one
        record = dkim_key_record(key)
        if record.key not in seen:  # at most one record per role: the newest
            seen.add(record.key)
            records.append(record)
    return records


def dkim_key_record(key: DkimKey) -> DnsRecord:
    """The record that publishes one key, named and described by its state."""
    ed = key.algorithm == DkimKey.Algorithm.ED25519
    if key.state == DkimKey.State.ACTIVE:
        suffix, description = "", ("Signs outgoing mail with Ed25519 beside the RSA key (RFC 8463)" if ed
                                   else "Signs outgoing mail so receivers can trust it")
    elif key.state == DkimKey.State.PENDING:
        suffix, description = "_next", (
            "Publish it: mail is signed with it beside RSA once we see it in DNS" if ed
            else "New key: publish it beside the current one; signing switches to it once we see it in DNS")
    elif key.state == DkimKey.State.RETIRING:
        suffix, description = "_previous", (f"Previous key, no longer signing: keep until {_day(key.retire_after)} "
                                            f"so mail signed with it still verifies")
    else:
        suffix, description = "_removable", (f"Retired {_day(key.retired_at)}, nothing is signed with it any "
                                             f"more: this record may be removed")
    prefix = "dkim_ed25519" if ed else "dkim"
    return DnsRecord(prefix + suffix, "TXT", f"{key.selector}._domainkey", dkim_public_record(key), description)


def _day(moment) -> str:
    """1 Dec 2026, as the portal writes dates."""
    return f"{moment.day} {moment:%b %Y}"


def is_dkim(record: DnsRecord) -> bool:
    return record.key.startswith("dkim")


def is_transitional(record: DnsRecord) -> bool:
    """A record a rotation asks for: the partner has something to do (or undo) while it is listed."""
    return is_dkim(record) and record.key.endswith(TRANSITIONAL_SUFFIXES)


def is_removable(record: DnsRecord) -> bool:
    return is_dkim(record) and record.key.endswith("_removable")


def _fqdn(domain: Domain, host: str) -> str:
    return domain.name if host == "@" else f"{host}.{domain.name}"


def _norm(name: str) -> str:
    return name.strip().rstrip(".").lower()


def _check_mx(record: DnsRecord, domain: Domain) -> None:
    answer = lookup(domain.name, "MX")
    if not answer.values:
        record.fail(DnsProblem.NO_MX)
        return
    record.found_value = ", ".join(answer.values)
    hosts = [_norm(value.split()[-1]) for value in answer.values]
    if _norm(settings.MAIL_HOST) in hosts:
        record.ok = True
    else:
        record.fail(DnsProblem.MX_ELSEWHERE, found_hosts=", ".join(hosts))


def _txt(domain: Domain, host: str) -> list[str]:
    return lookup(_fqdn(domain, host), "TXT").values


def _check_ownership(record: DnsRecord, domain: Domain, txt_at_apex: list[str]) -> None:
    prefixes = verify_prefixes()
    tokens = [value for value in txt_at_apex if value.partition("=")[0] in prefixes]
    record.found_value = ", ".join(tokens) or None
    if any(value.partition("=")[2] == domain.verification_token for value in tokens):
        record.ok = True
    elif tokens:
        record.fail(DnsProblem.TOKEN_MISMATCH)
    else:
        record.fail(DnsProblem.NO_TOKEN)


def _check_spf(record: DnsRecord, txt_at_apex: list[str]) -> None:
    spf = [value for value in txt_at_apex if value.lower().startswith("v=spf1")]
    record.found_value = " | ".join(spf) or None
    include = spf_include()
    if not spf:
        record.fail(DnsProblem.NO_SPF)
    elif len(spf) > 1:
        record.fail(DnsProblem.TWO_SPF)
    elif include not in spf[0].lower().split():
        record.fail(DnsProblem.SPF_LACKS_RELAY)
    else:
        record.ok = True


def _check_dmarc(record: DnsRecord, domain: Domain) -> None:
    dmarc = [value for value in _txt(domain, "_dmarc") if value.upper().startswith("V=DMARC1")]
    record.found_value = " | ".join(dmarc) or None
    if not dmarc:
        record.fail(DnsProblem.NO_DMARC)
    elif len(dmarc) > 1:
        record.fail(DnsProblem.TWO_DMARC)
    elif "p=" not in dmarc[0].replace(" ", "").lower():
        record.fail(DnsProblem.DMARC_NO_POLICY)
    else:
        record.ok = True


def _dkim_key(value: str) -> str:
    tags = dict(part.strip().split("=", 1) for part in value.split(";") if "=" in part)
    return tags.get("p", "").replace(" ", "")


def check_dkim(record: DnsRecord, domain: Domain) -> None:
    found = [value for value in _txt(domain, record.host) if "p=" in value]
    record.found_value = " | ".join(found) or None
    if not found:
        record.fail(DnsProblem.NO_DKIM)
    elif _dkim_key(found[0]) != _dkim_key(record.value):
        record.fail(DnsProblem.DKIM_MISMATCH)
    else:
        record.ok = True


def _check_tracking(record: DnsRecord, domain: Domain) -> None:
    found = [_norm(value) for value in lookup(_fqdn(domain, record.host), "CNAME").values]
    record.found_value = ", ".join(found) or None
    if not found:
        record.fail(DnsProblem.NO_TRACKING_HOST)
    elif found[0] != _norm(settings.TRACKING_HOST):
        record.fail(DnsProblem.TRACKING_HOST_ELSEWHERE, found=found[0])
    else:
        record.ok = True


def _check_mta_sts(record: DnsRecord, domain: Domain) -> None:
    found = [value for value in _txt(domain, record.host) if value.replace(" ", "").startswith("v=STSv1")]
    record.found_value = " | ".join(found) or None
    tags = dict(part.strip().split("=", 1) for part in found[0].split(";") if "=" in part) if found else {}
    if not found:
        record.fail(DnsProblem.NO_MTA_STS)
    elif len(found) > 1:
        record.fail(DnsProblem.TWO_MTA_STS)
    elif tags.get("id", "").strip() != record.value.rpartition("=")[2]:
        record.fail(DnsProblem.MTA_STS_OLD_ID)
    else:
        record.ok = True


def _addresses(name: str) -> set[str]:
    return set(lookup(name, "A").values) | set(lookup(name, "AAAA").values)


def _check_mta_sts_host(record: DnsRecord, domain: Domain) -> None:
    """A CNAME to WEBMAIL_HOST; a flattened one (the provider answers with addresses) counts when
    its addresses are WEBMAIL_HOST's."""
    name = _fqdn(domain, record.host)
    targets = [_norm(value) for value in lookup(name, "CNAME").values]
    if targets:
        record.found_value = ", ".join(targets)
        if targets == [_norm(record.value)]:
            record.ok = True
        else:
            record.fail(DnsProblem.MTA_STS_HOST_ELSEWHERE, found_hosts=", ".join(targets))
        return
    addresses = _addresses(name)
    record.found_value = ", ".join(sorted(addresses)) or None
    if not addresses:
        record.fail(DnsProblem.NO_MTA_STS_HOST)
    elif addresses == _addresses(record.value):
        record.ok = True
    else:
        record.fail(DnsProblem.MTA_STS_HOST_ELSEWHERE, found_hosts=", ".join(sorted(addresses)))


def _check_tlsrpt(record: DnsRecord, domain: Domain) -> None:
    found = [value for value in _txt(domain, record.host) if value.replace(" ", "").startswith("v=TLSRPTv1")]
    record.found_value = " | ".join(found) or None
    ours = record.value.rpartition("rua=")[2].lower()
    if not found:
        record.fail(DnsProblem.NO_TLSRPT)
    elif len(found) > 1:
        record.fail(DnsProblem.TWO_TLSRPT)
    elif ours not in [part.strip().lower() for part in found[0].rpartition("rua=")[2].split(",")]:
        record.fail(DnsProblem.TLSRPT_ELSEWHERE)
    else:
        record.ok = True


def check_records(domain: Domain) -> list[DnsRecord]:
    records = expected_records(domain)
    by_key = {record.key: record for record in records}
    apex = _txt(domain, "@")
    _check_mx(by_key["mx"], domain)
    _check_ownership(by_key["ownership"], domain, apex)
    _check_spf(by_key["spf"], apex)
    _check_dmarc(by_key["dmarc"], domain)
    for record in records:
        if is_removable(record):
            record.ok = True  # nothing to check: gone or not, all is well
        elif is_dkim(record):
            check_dkim(record, domain)
    _check_tracking(by_key["tracking"], domain)
    _check_mta_sts(by_key["mta_sts"], domain)
    _check_mta_sts_host(by_key["mta_sts_host"], domain)
    _check_tlsrpt(by_key["tlsrpt"], domain)
    return records
