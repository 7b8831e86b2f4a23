"""The DNS wizard's presentation: each record as a row with plain-words advice chosen by the check's
problem code (never by its English reason), and the one count of records found right."""
from dataclasses import dataclass

from mailcore.domains.dnscheck import CHECKED_RECORD_COUNT, DnsProblem, DnsRecord, is_removable, spf_include
from mailcore.domains.models import Domain
from mailcore.domains.services import domain_records
from webmail.client_settings import recommended_records

TITLES = {"mx": "Mail routing", "ownership": "Ownership", "spf": "Sender policy (SPF)",
          "dmarc": "Spoofing protection (DMARC)", "dkim": "Signature key (DKIM)", "tracking": "Tracking host",
          "mta_sts": "Encrypted delivery (MTA-STS)", "mta_sts_host": "MTA-STS policy host",
          "tlsrpt": "TLS reports (TLS-RPT)"}
# A DKIM key rotation's records (mailcore.domains.dnscheck.dkim_records).
TITLES |= {"dkim_next": "New signature key (DKIM rotation)", "dkim_previous": "Previous signature key (DKIM)",
           "dkim_removable": "Retired signature key (DKIM)", "dkim_ed25519": "Ed25519 signature key (DKIM)",
           "dkim_ed25519_next": "New Ed25519 signature key (DKIM)",
           "dkim_ed25519_previous": "Previous Ed25519 signature key (DKIM)",
           "dkim_ed25519_removable": "Retired Ed25519 signature key (DKIM)"}
# The records that help mail apps set themselves up (recommended, never checked).
TITLES |= {"autoconfig": "Thunderbird set-up", "autodiscover": "Outlook set-up", "srv_imaps": "Incoming mail server",
           "srv_submission": "Outgoing mail server", "srv_carddavs": "Contacts server", "txt_carddavs": "Contacts path",
           "srv_caldavs": "Calendar server", "txt_caldavs": "Calendar path"}


@dataclass
class RecordRow(DnsRecord):
    """One DNS record as the wizard shows it: what to create and what the last check found."""

    domain_name: str = ""

    @property
    def title(self) -> str:
        return TITLES.get(self.key, self.type)

    @property
    def required(self) -> bool:
        """Verification needs only these two; the others matter for delivery."""
        return self.key in ("mx", "ownership")

    @property
    def fqdn(self) -> str:
        return self.domain_name if self.host == "@" else f"{self.host}.{self.domain_name}"

    @property
    def state(self) -> str:
        if is_removable(self):
            return "removable"  # a retired DKIM key: nothing to publish, nothing to check
        return "unchecked" if self.ok is None else ("ok" if self.ok else "wrong")

    @property
    def mx_priority(self) -> str:
        return self.value.split()[0] if self.key == "mx" else ""

    @property
    def mx_host(self) -> str:
        return self.value.split()[-1] if self.key == "mx" else ""

    @property
    def srv_fields(self) -> dict[str, str]:
        """An SRV value in the separate fields most DNS providers ask for."""
        if self.type != "SRV":
            return {}
        return dict(zip(("priority", "weight", "port", "target"), self.value.split(), strict=True))

    @property
    def guidance(self) -> str:
        """What to do about a wrong record, in plain words."""
        if self.ok is not False:
            return ""
        at = "at the domain itself (@)" if self.host == "@" else f"with the host {self.host}"
        create = f"Create a TXT record {at} with this value."
        return {
            DnsProblem.NO_MX: (f"Create an MX record {at}. If your provider has a separate Priority field, enter "
                               f"{self.mx_priority} there and {self.mx_host} as the mail server."),
            DnsProblem.MX_ELSEWHERE: ("Your domain's mail currently goes elsewhere. Replace the existing MX records "
                                      "with ours, or mail keeps arriving at the old server."),
            DnsProblem.TOKEN_MISMATCH: ("A verification record exists but holds another token, perhaps from an "
                                        "earlier attempt. Change its value to the one above."),
            DnsProblem.NO_TOKEN: (f"Create a TXT record {at} with exactly this value. It can sit beside other TXT "
                                  f"records you already have."),
            DnsProblem.TWO_SPF: ("A domain may have only one SPF record. Merge them: keep one record starting "
                                 "v=spf1 and move the other's include: parts into it."),
            DnsProblem.SPF_LACKS_RELAY: (f"Your SPF record does not allow our servers yet. Add {spf_include()} to "
                                         f"it, just before the final ~all or -all."),
            DnsProblem.NO_SPF: (f"Create a TXT record {at} with this value. If you already have an SPF record "
                                f"(starting v=spf1), add our include: to it instead of creating a second one."),
            DnsProblem.TWO_DMARC: "Keep only one DMARC record: delete the others at _dmarc.",
            DnsProblem.DMARC_NO_POLICY: "Your DMARC record needs a policy: add p=none (or stricter) to it.",
            DnsProblem.NO_DMARC: create,
            DnsProblem.DKIM_MISMATCH: ("The key published is not ours. Replace the record's value with the one "
                                       "above, copied whole: a single character missing breaks it."),
            DnsProblem.NO_DKIM: (f"Create a TXT record {at} with this value, pasted as one long string; most "
                                 f"providers split it into parts by themselves."),
            DnsProblem.NO_MTA_STS: create,
            DnsProblem.TWO_MTA_STS: "Keep only one record starting v=STSv1 at _mta-sts: delete the others.",
            DnsProblem.MTA_STS_OLD_ID: ("The record names an earlier policy: senders keep using the policy they "
                                        "have until the id changes. Replace its value with the one above."),
            DnsProblem.NO_MTA_STS_HOST: (f"Create a CNAME record {at} pointing to {self.value}: we serve the "
                                        f"domain's MTA-STS policy there."),
            DnsProblem.MTA_STS_HOST_ELSEWHERE: (f"The name points elsewhere, so senders cannot fetch the policy we "
                                                f"serve. Make it a CNAME to {self.value}."),
            DnsProblem.NO_TLSRPT: create,
            DnsProblem.TWO_TLSRPT: "Keep only one record starting v=TLSRPTv1 at _smtp._tls: delete the others.",
            DnsProblem.TLSRPT_ELSEWHERE: ("The record sends TLS reports elsewhere. Add our address to its rua= "
                                          "(addresses are separated by commas) or replace its value with the one "
                                          "above, so the reports show up here."),
        }.get(self.problem, "Compare the record with the value above and correct it.")


def record_rows(domain: Domain) -> list[RecordRow]:
    """The checked records: the last check, or what to create before any check (optional ones apart)."""
    return [RecordRow(**vars(record), domain_name=domain.name) for record in domain_records(domain)
            if not record.optional]


def recommended_rows(domain: Domain) -> list[RecordRow]:
    """The mail-app set-up records and the optional checked ones (the domain's own tracking host):
    shown beside the checked ones, never counted."""
    optional = [record for record in domain_records(domain) if record.optional]
    return [RecordRow(**vars(record), domain_name=domain.name) for record in [*recommended_records(domain), *optional]]


@dataclass
class DnsSummary:
    total: int
    right: int
    checked: bool


def dns_summary(records) -> DnsSummary:
    """How many records the last check found right: the one count every page shows (records are
    DnsRecord/RecordRow objects or the API's dicts)."""
    oks = [record.get("ok") if isinstance(record, dict) else record.ok for record in records
           if not (record.get("optional") if isinstance(record, dict) else record.optional)]
    return DnsSummary(len(oks), sum(1 for ok in oks if ok), any(ok is not None for ok in oks))


def domain_dns_summary(domain: Domain) -> DnsSummary:
    """From the stored check alone (no DNS look-up, no key): for lists of domains. A verified domain
    without a stored check counts every record right, as its page (domain_records) shows it: a list
    must never say "Not checked yet" beside "Verified"."""
    if not domain.dns_check and domain.is_verified:  # verified with every record right
        count = CHECKED_RECORD_COUNT + domain.dkim_ed25519  # an Ed25519 key signing is one more record
        return DnsSummary(count, count, True)
    return dns_summary(domain.dns_check or [])
