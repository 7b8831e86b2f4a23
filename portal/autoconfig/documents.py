"""The XML documents mail clients read: Mozilla's autoconfig (clientConfig 1.1, the ISPDB format) and
Outlook's autodiscover (POX, request schema 2006, response schema 2006a). Built with ElementTree,
so every value is escaped; requests are parsed with defusedxml, which refuses DTDs and entities."""
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring as safe_fromstring

from webmail.client_settings import ClientSettings

EMAIL_ADDRESS = "%EMAILADDRESS%"  # Thunderbird puts the address the user typed here
AUTODISCOVER_REQUEST_NS = "http://schemas.microsoft.com/exchange/autodiscover/outlook/requestschema/2006"
AUTODISCOVER_NS = "http://schemas.microsoft.com/exchange/autodiscover/responseschema/2006"
OUTLOOK_RESPONSE_NS = "http://schemas.microsoft.com/exchange/autodiscover/outlook/responseschema/2006a"


def _add(parent: ET.Element, tag: str, text: str | int | None = None, **attributes) -> ET.Element:
    element = ET.SubElement(parent, tag, attributes)
    if text is not None:
        element.text = str(text)
    return element


def _document(root: ET.Element) -> bytes:
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


# --- Thunderbird -------------------------------------------------------------------------------


def thunderbird_config(config: ClientSettings) -> bytes:
    """clientConfig version 1.1: IMAP over TLS, SMTP submission with STARTTLS, CardDAV and CalDAV."""
    root = ET.Element("clientConfig", version="1.1")
    provider = _add(root, "emailProvider", id=config.domain)
    _add(provider, "domain", config.domain)
    _add(provider, "displayName", config.display_name)
    _add(provider, "displayShortName", config.display_name)
    incoming = _add(provider, "incomingServer", type="imap")
    for tag, value in (("hostname", config.imap_host), ("port", config.imap_port), ("socketType", config.imap_tls),
                       ("authentication", "password-cleartext"), ("username", EMAIL_ADDRESS)):
        _add(incoming, tag, value)
    outgoing = _add(provider, "outgoingServer", type="smtp")
    for tag, value in (("hostname", config.smtp_host), ("port", config.smtp_port), ("socketType", config.smtp_tls),
                       ("authentication", "password-cleartext"), ("username", EMAIL_ADDRESS)):
        _add(outgoing, tag, value)
    webmail = _add(provider, "webMail")
    _add(webmail, "loginPage", url=config.webmail_url)
    for tag, kind in (("addressBook", "carddav"), ("calendar", "caldav")):  # Thunderbird 102 and later
        collection = _add(root, tag, type=kind)
        _add(collection, "username", EMAIL_ADDRESS)
        _add(collection, "authentication", "http-basic")
        _add(collection, "serverURL", config.dav_url)
    return _document(root)


# --- Outlook -----------------------------------------------------------------------------------


class AutodiscoverRequestInvalid(ValueError):
    """Not an Outlook autodiscover request we can read; `hostile` when it carried a DTD or entities."""

    def __init__(self, message: str, *, hostile: bool = False):
        super().__init__(message)
        self.hostile = hostile


@dataclass(frozen=True)
class AutodiscoverRequest:
    email_address: str
    response_schema: str  # empty when the request names none


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def autodiscover_request_parse(body: bytes) -> AutodiscoverRequest:
    """The address and the wanted response schema of an autodiscover POST body."""
    try:
        root = safe_fromstring(body, forbid_dtd=True)
    except DefusedXmlException:
        raise AutodiscoverRequestInvalid("DTDs and entities are not accepted", hostile=True) from None
    except ET.ParseError:
        raise AutodiscoverRequestInvalid("the body is not well-formed XML") from None
    if _local(root.tag) != "Autodiscover":
        raise AutodiscoverRequestInvalid("the root element is not Autodiscover")
    request = next((child for child in root if _local(child.tag) == "Request"), None)
    fields = {_local(child.tag): (child.text or "").strip() for child in (request if request is not None else [])}
    address = fields.get("EMailAddress", "")
    if not address or "@" not in address or len(address) > 320:
        raise AutodiscoverRequestInvalid("the request has no EMailAddress")
    return AutodiscoverRequest(email_address=address, response_schema=fields.get("AcceptableResponseSchema", ""))


def autodiscover_response(config: ClientSettings, *, address: str) -> bytes:
    """The Outlook response: one email account with an IMAP and an SMTP protocol, login by address."""
    root = ET.Element("Autodiscover", xmlns=AUTODISCOVER_NS)
    response = _add(root, "Response", xmlns=OUTLOOK_RESPONSE_NS)
    account = _add(response, "Account")
    _add(account, "AccountType", "email")
    _add(account, "Action", "settings")
    imap = _add(account, "Protocol")
    for tag, value in (("Type", "IMAP"), ("Server", config.imap_host), ("Port", config.imap_port),
                       ("DomainRequired", "off"), ("LoginName", address), ("SPA", "off"), ("SSL", "on"),
                       ("AuthRequired", "on")):
        _add(imap, tag, value)
    smtp = _add(account, "Protocol")
    for tag, value in (("Type", "SMTP"), ("Server", config.smtp_host), ("Port", config.smtp_port),
                       ("DomainRequired", "off"), ("LoginName", address), ("SPA", "off"), ("Encryption", "TLS"),
                       ("AuthRequired", "on"), ("UsePOPAuth", "off"), ("SMTPLast", "off")):
        _add(smtp, tag, value)
    return _document(root)


def autodiscover_error(code: int, message: str) -> bytes:
    """An Autodiscover Error response (600 invalid request, 601 no provider for the asked schema)."""
    root = ET.Element("Autodiscover", xmlns=AUTODISCOVER_NS)
    error = _add(_add(root, "Response"), "Error")
    _add(error, "ErrorCode", code)
    _add(error, "Message", message)
    _add(error, "DebugData", "")
    return _document(root)
