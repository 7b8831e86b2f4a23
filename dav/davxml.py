"""WebDAV XML in and out: request bodies parsed with defusedxml (no DTDs, no entities, no external
references), multistatus and error bodies built with ElementTree under the usual prefixes."""
from collections.abc import Callable, Iterable
from xml.etree import ElementTree as ET

import defusedxml.ElementTree as SafeET
from defusedxml import DefusedXmlException

DAV = "DAV:"
CALDAV = "urn:ietf:params:xml:ns:caldav"
CARDDAV = "urn:ietf:params:xml:ns:carddav"
CS = "http://calendarserver.org/ns/"
ICAL = "http://apple.com/ns/ical/"

for _prefix, _uri in (("d", DAV), ("cal", CALDAV), ("card", CARDDAV), ("cs", CS), ("ical", ICAL)):
    ET.register_namespace(_prefix, _uri)

Fill = Callable[[ET.Element], None]
"""What a property's value does to its (empty) element: set text, add children."""


class XmlRefused(ValueError):
    """The body is not well-formed XML, or it declares a DTD or entities (hostile XML)."""


def d(name: str) -> str:
    return f"{{{DAV}}}{name}"


def cal(name: str) -> str:
    return f"{{{CALDAV}}}{name}"


def card(name: str) -> str:
    return f"{{{CARDDAV}}}{name}"


def parse(body: bytes) -> ET.Element | None:
    """The document's root element, None for an empty body."""
    if not body.strip():
        return None
    try:
        return SafeET.fromstring(body, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except (DefusedXmlException, ET.ParseError, ValueError) as exc:
        raise XmlRefused(str(exc)) from exc


def text(value: str) -> Fill:
    def fill(element: ET.Element) -> None:
        element.text = value
    return fill


def hrefs(*paths: str) -> Fill:
    def fill(element: ET.Element) -> None:
        for path in paths:
            ET.SubElement(element, d("href")).text = path
    return fill


def children(*tags: str) -> Fill:
    def fill(element: ET.Element) -> None:
        for tag in tags:
            ET.SubElement(element, tag)
    return fill


def privileges(*names: str) -> Fill:
    def fill(element: ET.Element) -> None:
        for name in names:
            ET.SubElement(ET.SubElement(element, d("privilege")), d(name))
    return fill


def reports(*tags: str) -> Fill:
    def fill(element: ET.Element) -> None:
        for tag in tags:
            ET.SubElement(ET.SubElement(ET.SubElement(element, d("supported-report")), d("report")), tag)
    return fill


def empty(element: ET.Element) -> None:
    pass


def stored(xml: str) -> Fill:
    """A dead property as a client set it (kept as its serialized element): its text, attributes and children."""
    def fill(element: ET.Element) -> None:
        try:
            source = SafeET.fromstring(xml, forbid_dtd=True, forbid_entities=True, forbid_external=True)
        except (DefusedXmlException, ET.ParseError, ValueError):
            return
        element.text = source.text
        element.attrib.update(source.attrib)
        element.extend(list(source))
    return fill


def to_text(element: ET.Element) -> str:
    """An element as it is stored for a dead property."""
    return ET.tostring(element, encoding="unicode")


class Multistatus:
    """A 207 body: one response per href, found properties in a 200 propstat, the rest in others."""

    def __init__(self) -> None:
        self.root = ET.Element(d("multistatus"))

    def add(self, href: str, *, found: dict[str, Fill] | None = None, missing: Iterable[str] = (),
            statuses: dict[str, list[str]] | None = None, status: str | None = None,
            reasons: dict[str, str] | None = None) -> None:
        """`reasons`: a DAV:responsedescription per propstat status ("403 Forbidden": why)."""
        response = ET.SubElement(self.root, d("response"))
        ET.SubElement(response, d("href")).text = href
        if status is not None:
            ET.SubElement(response, d("status")).text = f"HTTP/1.1 {status}"
            return
        groups = dict(statuses or {})
        if found:
            self._propstat(response, "200 OK", found)
        missing = list(missing)
        if missing:
            groups.setdefault("404 Not Found", []).extend(missing)
        for code, tags in groups.items():
            self._propstat(response, code, {tag: empty for tag in tags}, (reasons or {}).get(code))
        if not found and not groups:  # a response needs a propstat or a status
            self._propstat(response, "200 OK", {})

    @staticmethod
    def _propstat(response: ET.Element, code: str, properties: dict[str, Fill], reason: str | None = None) -> None:
        propstat = ET.SubElement(response, d("propstat"))
        prop = ET.SubElement(propstat, d("prop"))
        for tag, fill in properties.items():
            fill(ET.SubElement(prop, tag))
        ET.SubElement(propstat, d("status")).text = f"HTTP/1.1 {code}"
        if reason:
            ET.SubElement(propstat, d("responsedescription")).text = reason

    def sync_token(self, token: str) -> None:
        ET.SubElement(self.root, d("sync-token")).text = token

    def to_bytes(self) -> bytes:
        return serialize(self.root)

    def as_root(self, tag: str) -> "Multistatus":
        """The same body under another root element (CalDAV's mkcalendar-response, RFC 5689's mkcol-response)."""
        self.root.tag = tag
        return self


def error(*conditions: str) -> bytes:
    """A DAV:error body naming the failed preconditions."""
    root = ET.Element(d("error"))
    for tag in conditions:
        ET.SubElement(root, tag)
    return serialize(root)


def serialize(root: ET.Element) -> bytes:
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)
