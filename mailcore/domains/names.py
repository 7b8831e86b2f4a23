"""Host names and mail addresses in the forms the wire needs: checked once, converted to ASCII.

Every name a caller hands us (a domain to claim, an IMAP server to connect to, the domain of a
recipient) goes through here, so a name that DNS, IMAP or SMTP would choke on is a validation
error when the request is made, not a crash later.
"""
import ipaddress

import dns.exception
import dns.name

MAX_HOSTNAME = 253
MAX_LABEL = 63


class InvalidHostname(ValueError):
    """The name cannot be a host name; the message says why, in words for the caller."""


def hostname_to_ascii(name: str, *, allow_ip: bool = False, require_dot: bool = True, noun: str = "host name") -> str:
    """The lower-case ASCII (IDNA) form of a host name: at most 253 characters, labels of 1 to 63
    letters, digits and inner hyphens, and a top-level label that is not all digits."""
    text = (name or "").strip().rstrip(".").lower()
    if not text:
        raise InvalidHostname(f"a {noun} is needed")
    if allow_ip:
        try:
            return str(ipaddress.ip_address(text.strip("[]")))
        except ValueError:
            pass
    if any(char.isspace() for char in text) or (require_dot and "." not in text):
        raise InvalidHostname(f"{name!r} is not a {noun}")
    try:
        ascii_name = dns.name.from_unicode(text).to_text(omit_final_dot=True)
    except dns.name.LabelTooLong:
        raise InvalidHostname(f"a label of {name!r} is longer than {MAX_LABEL} characters") from None
    except (dns.exception.DNSException, UnicodeError, ValueError):
        raise InvalidHostname(f"{name!r} is not a valid {noun}") from None
    if len(ascii_name) > MAX_HOSTNAME:
        raise InvalidHostname(f"a {noun} has at most {MAX_HOSTNAME} characters")
    labels = ascii_name.split(".")
    if any(not label or len(label) > MAX_LABEL or label.startswith("-") or label.endswith("-")
           or not all(c.isalnum() or c == "-" for c in label) or not label.isascii() for label in labels) \
            or labels[-1].isdigit():
        raise InvalidHostname(f"{name!r} is not a valid {noun}")
    return ascii_name


def address_to_ascii(address: str) -> str:
    """An address whose domain is in its ASCII (IDNA) form; the local part must already be ASCII
    (SMTPUTF8 local parts are refused: see docs/decisions.md)."""
    local, at, domain = address.strip().rpartition("@")
    if not at or not local:
        raise InvalidHostname(f"{address!r} is not an email address")
    if not local.isascii():
        raise InvalidHostname(f"{address!r} has a non-ASCII local part, which we cannot deliver yet (SMTPUTF8)")
    if domain.isascii():
        return f"{local}@{domain}"
    return f"{local}@{hostname_to_ascii(domain, require_dot=False)}"
