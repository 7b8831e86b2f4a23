"""Setting up mail apps, for the signed-in owner: the page that explains it (Apple devices, Thunderbird,
Outlook, and the manual settings for everything else) and the Apple configuration profile
(.mobileconfig) with the mail account and, when the plan has them, CardDAV and CalDAV.

The profile never holds the password: the device asks for it when the profile is installed. Its
identifiers and UUIDs are derived from the mailbox and the host, so installing it again replaces the
earlier copy instead of adding a second account."""
import plistlib
import re
import uuid
from dataclasses import replace
from urllib.parse import urlsplit

from django.conf import settings
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from webmail.client_settings import ClientSettings, client_settings_for, mail_servers_run
from mailcore.mailboxes.models import Mailbox
from portal.webmail.access import owner_required
from portal.webmail_host import is_platform_host, request_brand
from portal.webmail.owner_settings import SECTIONS

CONTENT_TYPE = "application/x-apple-aspen-config"
PROFILE_NAMESPACE = uuid.UUID("6f1d7c52-52e4-4c47-9b0e-7d4f3a9a2c11")  # ours: names the profiles' UUIDs


def _client_settings(request, mailbox: Mailbox) -> ClientSettings:
    if mailbox.domain is None or not mailbox.is_managed:
        raise Http404("This mailbox is not hosted here.")
    brand = request_brand(request)
    config = client_settings_for(mailbox.domain, web_host=brand.hostname if brand is not None else None)
    if brand is not None or _on_partner_hostname(config):
        return config
    return replace(config, **_platform_dav_origin(request))


def _on_partner_hostname(config: ClientSettings) -> bool:
    """Whether DAV already points at a partner's own verified hostname (always served over HTTPS)."""
    return config.dav_host != settings.WEBMAIL_HOST


def _platform_dav_origin(request) -> dict:
    """Where the owner reaches DAV on the platform's own address: the webmail origin they are on when
    that is one of the platform's names (so a local run gives http://127.0.0.1:9000), else PUBLIC_BASE_URL's."""
    host = request.get_host()
    origin = urlsplit(f"{request.scheme}://{host}")
    hostname = origin.hostname or ""
    if not (is_platform_host(hostname) or is_platform_host(f"[{hostname}]")):
        origin = urlsplit(settings.PUBLIC_BASE_URL)
    default_port = 443 if origin.scheme == "https" else 80
    hostname = origin.hostname or settings.WEBMAIL_HOST
    return {"dav_scheme": origin.scheme, "dav_port": origin.port or default_port,
            "dav_host": f"[{hostname}]" if ":" in hostname else hostname}


def _sync_features(mailbox: Mailbox) -> dict[str, bool]:
    plan = mailbox.effective_plan
    return {"contacts": plan.has_feature("contacts"), "calendar": plan.has_feature("calendar")}


def _reverse_dns(host: str) -> str:
    return ".".join(reversed(host.split(".")))


def mobileconfig_build(*, mailbox: Mailbox, config: ClientSettings, contacts: bool, calendar: bool) -> bytes:
    """The profile as plist XML bytes: com.apple.mail.managed, then com.apple.carddav.account and
    com.apple.caldav.account when `contacts` / `calendar`."""
    address = mailbox.address
    name = mailbox.display_name or address
    prefix = f"{_reverse_dns(config.dav_host)}.mailprofile.{mailbox.pk}"

    def payload(kind: str, payload_type: str, display_name: str, **keys) -> dict:
        return {"PayloadType": payload_type, "PayloadVersion": 1, "PayloadIdentifier": f"{prefix}.{kind}",
                "PayloadUUID": str(uuid.uuid5(PROFILE_NAMESPACE, f"{prefix}.{kind}:{address}")).upper(),
                "PayloadDisplayName": display_name, **keys}

    payloads = [payload(
        "mail", "com.apple.mail.managed", f"Mail ({address})",
        EmailAccountDescription=f"{config.display_name} ({address})",
        EmailAccountName=name,
        EmailAccountType="EmailTypeIMAP",
        EmailAddress=address,
        IncomingMailServerAuthentication="EmailAuthPassword",
        IncomingMailServerHostName=config.imap_host,
        IncomingMailServerPortNumber=config.imap_port,
        IncomingMailServerUseSSL=True,
        IncomingMailServerUsername=address,
        OutgoingMailServerAuthentication="EmailAuthPassword",
        OutgoingMailServerHostName=config.smtp_host,
        OutgoingMailServerPortNumber=config.smtp_port,
        OutgoingMailServerUseSSL=True,  # STARTTLS on the submission port
        OutgoingMailServerUsername=address,
        OutgoingPasswordSameAsIncomingPassword=True,
    )]
    for enabled, kind, prefix_key, label in ((contacts, "carddav", "CardDAV", "Contacts"),
                                             (calendar, "caldav", "CalDAV", "Calendar")):
        if enabled:
            payloads.append(payload(
                kind, f"com.apple.{kind}.account", f"{label} ({address})",
                **{f"{prefix_key}AccountDescription": f"{config.display_name} {label.lower()} ({address})",
                   f"{prefix_key}HostName": config.dav_host,
                   f"{prefix_key}Port": config.dav_port,
                   f"{prefix_key}UseSSL": config.dav_uses_tls,
                   f"{prefix_key}Username": address,
                   f"{prefix_key}PrincipalURL": config.principal_path(address)}))
    profile = {
        "PayloadType": "Configuration",
        "PayloadVersion": 1,
        "PayloadIdentifier": prefix,
        "PayloadUUID": str(uuid.uuid5(PROFILE_NAMESPACE, f"{prefix}:{address}")).upper(),
        "PayloadDisplayName": f"{config.display_name}: {address}",
        "PayloadDescription": f"Sets up {address} for mail"
                              + (", contacts" if contacts else "") + (" and calendar" if calendar else "")
                              + ". Your device asks for the mailbox password.",
        "PayloadOrganization": config.display_name,
        "PayloadRemovalDisallowed": False,
        "PayloadContent": payloads,
    }
    return plistlib.dumps(profile, fmt=plistlib.FMT_XML)


@require_GET
@owner_required
def mail_apps(request, mailbox):
    """How to set up mail apps: Apple (download), Thunderbird and Outlook (automatic), and the rest."""
    config = _client_settings(request, mailbox)
    return render(request, "webmail/settings/mail_apps.html", {
        "mailbox": mailbox, "sections": SECTIONS, "client": config, "features": _sync_features(mailbox),
        "principal_path": config.principal_path(mailbox.address), "mail_servers": mail_servers_run(),
    })


@require_GET
@owner_required
def mobileconfig(request, mailbox):
    """The signed-in owner's Apple configuration profile, as a download; none where no IMAP server runs."""
    if not mail_servers_run():
        raise Http404("No IMAP or SMTP server runs here (MAIL_STORE=embedded): there is no profile to install.")
    config = _client_settings(request, mailbox)
    body = mobileconfig_build(mailbox=mailbox, config=config, **_sync_features(mailbox))
    response = HttpResponse(body, content_type=CONTENT_TYPE)
    filename = re.sub(r"[^A-Za-z0-9._-]", "-", mailbox.address.replace("@", "-at-")) + ".mobileconfig"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "private, no-store"
    return response
