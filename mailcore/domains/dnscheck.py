"""The five DNS records a hosted domain carries, and checking each one with a specific reason.

Verification needs only the MX record and the ownership token; SPF, DMARC and DKIM are checked
and reported too, so a verified domain can still show what to fix. While a DKIM key rotation runs
(mailcore.domains.rotation) the domain carries one more DKIM record: the new key, then the old one
to keep for a week, then the old one that may be removed.
"""
from dataclasses import asdict, dataclass
from enum import StrEnum

from django.conf import settings

from mailcore.dnslookup import lookup
from mailcore.domains.dkim import dkim_key_for, dkim_public_record
from mailcore.domains.models import DkimKey, Domain


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


def reason_text(problem: DnsProblem, *, found_hosts: str = "") -> str:
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
    }[problem]


def spf_include() -> str:
    return f"include:{settings.RELAY_HOST}".lower()


@dataclass
class DnsRecord:
    key: str  # mx, ownership, spf, dmarc, dkim (and the rotation's: see dkim_records)
    type: str
    host: str
    value: str
    description: str
    ok: bool | None = None
    found_value: str | None = None
    reason: str | None = None
    problem: DnsProblem | None = None

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


def expected_records(domain: Domain) -> list[DnsRecord]:
    return [
        DnsRecord("mx", "MX", "@", f"10 {settings.MAIL_HOST}", "Routes incoming mail to our mail servers"),
        DnsRecord("ownership", "TXT", "@", f"{settings.DOMAIN_VERIFY_PREFIX}={domain.verification_token}",
                  "Proves you control this domain's DNS"),
        DnsRecord("spf", "TXT", "@", f"v=spf1 mx include:{settings.RELAY_HOST} ~all",
                  "Authorizes us to send mail for the domain"),
        DnsRecord("dmarc", "TXT", "_dmarc", f"v=DMARC1; p=none; rua=mailto:dmarc@{domain.name}",
                  "Protects the domain against spoofing"),
        *dkim_records(domain),
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
    return records
