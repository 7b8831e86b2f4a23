"""The server settings a mail client needs for a hosted domain (IMAP, SMTP submission, CardDAV and
CalDAV, the name to show), in one place for Thunderbird's autoconfig, Outlook's autodiscover, the
Apple profile, the webmail's manual settings table and the DNS wizard's recommended records.

Only verified domains are described; the answer is per domain, never per mailbox, so it tells
nobody which addresses exist."""
from dataclasses import dataclass
from urllib.parse import quote

from django.conf import settings

from mailcore.domains.dnscheck import DnsRecord
from mailcore.domains.models import Domain
from mailcore.partners.models import HostingPartner
from webmail.hostnames import served_hostnames
from webmail.models import WebmailBrand

PRODUCT_NAME = "Mailwell"
DAV_PATH = "/dav/"
DAV_PORT = 443


@dataclass(frozen=True)
class ClientSettings:
    """What a mail client is told for one domain."""

    domain: str
    display_name: str
    imap_host: str
    imap_port: int
    smtp_host: str
    smtp_port: int
    dav_host: str
    dav_port: int = DAV_PORT
    imap_tls: str = "SSL"  # TLS from the first byte (993)
    smtp_tls: str = "STARTTLS"  # submission upgrades the plain connection (587)
    dav_scheme: str = "https"  # http only where the webmail itself is reached over plain HTTP (a local run)

    @property
    def dav_uses_tls(self) -> bool:
        return self.dav_scheme == "https"

    @property
    def _web_origin(self) -> str:
        default_port = 443 if self.dav_uses_tls else 80
        port = "" if self.dav_port == default_port else f":{self.dav_port}"
        return f"{self.dav_scheme}://{self.dav_host}{port}"

    @property
    def dav_url(self) -> str:
        return f"{self._web_origin}{DAV_PATH}"

    @property
    def webmail_url(self) -> str:
        return f"{self._web_origin}/"

    @staticmethod
    def principal_path(address: str) -> str:
        return f"{DAV_PATH}principals/{quote(address, safe="@:+-._~!$&'()*,;=")}/"  # as dav.tree writes it


def mail_servers_run() -> bool:
    """Whether IMAP and SMTP submission servers stand behind the settings: not with the embedded store
    (`make run`'s default), which keeps mail in the database and runs neither."""
    return settings.MAIL_STORE != "embedded"


def domain_partner_id(domain: Domain) -> int | None:
    """The hosting partner whose client's domain this is, or None for an ordinary account's."""
    return HostingPartner.objects.filter(account_id=domain.account_id).values_list("pk", flat=True).first()


def _served_hostname(partner_id: int) -> str | None:
    return next((name for name, owner in served_hostnames().items() if owner == partner_id), None)


def client_settings_for(domain: Domain, *, web_host: str | None = None) -> ClientSettings:
    """The settings for `domain`. DAV is reached at `web_host` when given (the partner hostname a
    request came in on), else at the domain's partner's verified webmail hostname, else WEBMAIL_HOST."""
    partner_id = domain_partner_id(domain)
    brand_name = ""
    if partner_id is not None:
        brand = WebmailBrand.objects.filter(partner_id=partner_id).values_list("brand_name", flat=True).first()
        brand_name = brand or ""
        web_host = web_host or _served_hostname(partner_id)
    return ClientSettings(
        domain=domain.name,
        display_name=brand_name or PRODUCT_NAME,
        imap_host=settings.MAIL_HOST,
        imap_port=settings.MAIL_CLIENT_IMAP_PORT,
        smtp_host=settings.MAIL_HOST,
        smtp_port=settings.MAIL_CLIENT_SUBMISSION_PORT,
        dav_host=web_host or settings.WEBMAIL_HOST,
    )


def recommended_records(domain: Domain) -> list[DnsRecord]:
    """DNS records that let mail apps find their settings (autoconfig/autodiscover names, RFC 6186
    and RFC 6764 SRV and TXT records). Recommended only: never checked, never part of verification."""
    config = client_settings_for(domain)
    web = settings.WEBMAIL_HOST  # where the app answers autoconfig and autodiscover for any hosted domain
    return [
        DnsRecord("autoconfig", "CNAME", "autoconfig", web, "Lets Thunderbird and other apps find the settings"),
        DnsRecord("autodiscover", "CNAME", "autodiscover", web, "Lets Outlook find the settings"),
        DnsRecord("srv_imaps", "SRV", "_imaps._tcp", f"0 1 {config.imap_port} {config.imap_host}",
                  "Names the incoming mail server (IMAP over TLS)"),
        DnsRecord("srv_submission", "SRV", "_submission._tcp", f"0 1 {config.smtp_port} {config.smtp_host}",
                  "Names the outgoing mail server (SMTP submission)"),
        DnsRecord("srv_carddavs", "SRV", "_carddavs._tcp", f"0 1 {config.dav_port} {config.dav_host}",
                  "Names the contacts server (CardDAV)"),
        DnsRecord("txt_carddavs", "TXT", "_carddavs._tcp", f"path={DAV_PATH}", "Gives the contacts server's path"),
        DnsRecord("srv_caldavs", "SRV", "_caldavs._tcp", f"0 1 {config.dav_port} {config.dav_host}",
                  "Names the calendar server (CalDAV)"),
        DnsRecord("txt_caldavs", "TXT", "_caldavs._tcp", f"path={DAV_PATH}", "Gives the calendar server's path"),
    ]
