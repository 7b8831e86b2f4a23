"""The addresses on every hosted domain where receivers send DMARC aggregate reports (RFC 7489 rua)
and TLS-RPT reports (RFC 8460 rua): named once here, published by the DNS wizard, accepted by the
listener for the trust app, and never taken by a mailbox or an alias."""

DMARC_REPORTS_LOCAL = "dmarc-reports"
TLS_REPORTS_LOCAL = "tls-reports"

# The kind of report each address receives, by local part.
REPORT_KINDS = {DMARC_REPORTS_LOCAL: "dmarc", TLS_REPORTS_LOCAL: "tlsrpt"}


def dmarc_report_address(domain_name: str) -> str:
    return f"{DMARC_REPORTS_LOCAL}@{domain_name}"


def tls_report_address(domain_name: str) -> str:
    return f"{TLS_REPORTS_LOCAL}@{domain_name}"


def is_report_local_part(local_part: str) -> bool:
    """True for a report address's local part, with or without a "+tag" (a mailbox may not take one)."""
    return (local_part or "").strip().lower().partition("+")[0] in REPORT_KINDS
