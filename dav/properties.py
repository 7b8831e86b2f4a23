"""Every property a resource has, and the multistatus response that PROPFIND and each REPORT build from them."""
import re
from collections.abc import Callable
from xml.etree import ElementTree as ET

import icalendar
from django.utils.http import http_date

from dav import davxml
from dav.bodies import MAX_RESOURCE_BYTES
from dav.conditions import quoted_etag
from dav.davxml import CS, ICAL, Multistatus, cal, card, d
from dav.media import content_type_of
from dav.tree import (
    BOOK, BOOK_HOME, CAL_HOME, CALENDAR, CONTACT, EVENT, PRINCIPAL, ROOT, ROOT_KIND, Node, book_home_href,
    calendar_home_href, plan_features, principal_href,
)
from calendars import ical

EXPENSIVE = {card("address-data"), cal("calendar-data")}  # only when asked for by name
READ_ONLY = ("read", "read-current-user-privilege-set")
READ_WRITE = ("read", "write", "write-properties", "write-content", "bind", "unbind",
              "read-current-user-privilege-set")
HOME = ("read", "bind", "unbind", "read-current-user-privilege-set")  # books and calendars are made and deleted in it
DESCRIPTIONS = (card("addressbook-description"), cal("calendar-description"))  # live until a client sets one
SYNC_TOKEN = re.compile(r"/ns/sync/(?P<kind>[bc])(?P<pk>\d+)-(?P<revision>\d+)$")  # what sync_token writes

Representation = Callable[[Node], str]
"""The text a REPORT answers in calendar-data or address-data for a member (expanded, converted)."""


def sync_token(request, node: Node) -> str:
    kind = "b" if node.kind == BOOK else "c"
    return f"https://{request.get_host()}/ns/sync/{kind}{node.collection.pk}-{node.collection.revision}"


def _timezone_text(name: str) -> str | None:
    if not name:
        return None
    try:
        calendar = icalendar.Calendar()
        calendar.add("prodid", ical.PRODID)
        calendar.add("version", "2.0")
        calendar.add_component(icalendar.Timezone.from_tzid(name))
        return calendar.to_ical().decode()
    except Exception:  # an unknown or odd zone: the property is simply not there
        return None


def properties(request, node: Node) -> dict[str, davxml.Fill]:
    """Every property the node has, by Clark name."""
    mailbox = node.mailbox
    principal = principal_href(mailbox)
    props: dict[str, davxml.Fill] = {
        d("current-user-principal"): davxml.hrefs(principal),
        d("principal-collection-set"): davxml.hrefs(f"{ROOT}principals/"),
        d("owner"): davxml.hrefs(principal),
    }
    if node.is_collection:
        props[d("resourcetype")] = davxml.children(d("collection"))
    else:
        props[d("resourcetype")] = davxml.empty
    writable = node.kind in (BOOK, CALENDAR, CONTACT, EVENT)
    privileges = READ_WRITE if writable else HOME if node.kind in (BOOK_HOME, CAL_HOME) else READ_ONLY
    props[d("current-user-privilege-set")] = davxml.privileges(*privileges)

    if node.kind == PRINCIPAL:
        contacts, calendar = plan_features(mailbox)
        props[d("resourcetype")] = davxml.children(d("collection"), d("principal"))
        props[d("displayname")] = davxml.text(mailbox.display_name or mailbox.address)
        props[d("principal-URL")] = davxml.hrefs(principal)
        addresses = [f"mailto:{mailbox.address}"] + [f"mailto:{alias.address}" for alias in mailbox.aliases.all()]
        props[cal("calendar-user-address-set")] = davxml.hrefs(*addresses)
        if contacts:
            props[card("addressbook-home-set")] = davxml.hrefs(book_home_href(mailbox))
        if calendar:
            props[cal("calendar-home-set")] = davxml.hrefs(calendar_home_href(mailbox))
    elif node.kind == ROOT_KIND:
        props[d("displayname")] = davxml.text("Mailwell CardDAV/CalDAV")
    elif node.kind in (BOOK_HOME, CAL_HOME):
        props[d("displayname")] = davxml.text(mailbox.address)
    elif node.kind in (BOOK, CALENDAR):
        collection = node.collection
        props[d("displayname")] = davxml.text(collection.name)
        props[d("sync-token")] = davxml.text(sync_token(request, node))
        props[f"{{{CS}}}getctag"] = davxml.text(str(collection.revision))
        props[d("getetag")] = davxml.text(quoted_etag(f"{node.kind}-{collection.pk}-{collection.revision}"))
        if node.kind == BOOK:
            props[d("resourcetype")] = davxml.children(d("collection"), card("addressbook"))
            props[card("addressbook-description")] = davxml.text(f"Contacts of {mailbox.address}")
            props[card("supported-address-data")] = _address_data_types
            props[card("max-resource-size")] = davxml.text(str(MAX_RESOURCE_BYTES))
            props[f"{{{ICAL}}}calendar-color"] = davxml.text(collection.color)
            props[d("supported-report-set")] = davxml.reports(
                card("addressbook-multiget"), card("addressbook-query"), d("sync-collection"))
        else:
            props[d("resourcetype")] = davxml.children(d("collection"), cal("calendar"))
            props[cal("calendar-description")] = davxml.text(f"Calendar of {mailbox.address}")
            props[cal("supported-calendar-component-set")] = _components(collection.component_set)
            props[cal("supported-calendar-data")] = _calendar_data_types
            props[cal("max-resource-size")] = davxml.text(str(MAX_RESOURCE_BYTES))
            props[f"{{{ICAL}}}calendar-color"] = davxml.text(collection.color)
            props[d("supported-report-set")] = davxml.reports(
                cal("calendar-multiget"), cal("calendar-query"), cal("free-busy-query"), d("sync-collection"))
            zone_text = _timezone_text(collection.timezone)
            if zone_text:
                props[cal("calendar-timezone")] = davxml.text(zone_text)
        for name, stored in collection.properties.items():  # what clients set (descriptions included)
            if name not in props or name in DESCRIPTIONS:
                props[name] = davxml.stored(stored)
    elif node.kind in (CONTACT, EVENT) and node.obj is not None:
        obj = node.obj
        stored = obj.vcard if node.kind == CONTACT else obj.ical
        props[d("getetag")] = davxml.text(quoted_etag(obj.etag))
        props[d("getcontenttype")] = davxml.text(content_type_of(node))
        props[d("getcontentlength")] = davxml.text(str(len(stored.encode())))
        props[d("getlastmodified")] = davxml.text(http_date(obj.updated_at.timestamp()))
        props[card("address-data") if node.kind == CONTACT else cal("calendar-data")] = davxml.text(stored)
    return props


def _address_data_types(element: ET.Element) -> None:
    for version in ("3.0", "4.0"):
        ET.SubElement(element, card("address-data-type"), {"content-type": "text/vcard", "version": version})


def _calendar_data_types(element: ET.Element) -> None:
    ET.SubElement(element, cal("calendar-data"), {"content-type": "text/calendar", "version": "2.0"})


def _components(names: list[str]) -> davxml.Fill:
    def fill(element: ET.Element) -> None:
        for name in names:
            ET.SubElement(element, cal("comp"), {"name": name})
    return fill


def requested(root: ET.Element | None) -> tuple[str, list[str]]:
    """What a PROPFIND (or a REPORT's prop list) asks for: ("allprop"|"propname"|"prop", names)."""
    if root is None:
        return "allprop", []
    if root.find(d("propname")) is not None:
        return "propname", []
    prop = root.find(d("prop"))
    if prop is not None:
        return "prop", [child.tag for child in prop]
    return "allprop", []


def report_requested(root: ET.Element) -> tuple[str, list[str]]:
    """What a REPORT asks for: its prop list, or the ETag alone."""
    mode, names = requested(root)
    return ("prop", names) if mode == "prop" else ("prop", [d("getetag")])


def add_response(multistatus: Multistatus, request, node: Node, mode: str, names: list[str],
                 representation: Representation | None = None) -> None:
    props = properties(request, node)
    if representation is not None and node.obj is not None:
        data = card("address-data") if node.kind == CONTACT else cal("calendar-data")
        if data in names:
            props[data] = davxml.text(representation(node))
    if mode == "propname":
        multistatus.add(node.href, found={name: davxml.empty for name in props})
    elif mode == "allprop":
        multistatus.add(node.href, found={name: fill for name, fill in props.items() if name not in EXPENSIVE})
    else:
        found = {name: props[name] for name in names if name in props}
        multistatus.add(node.href, found=found, missing=[name for name in names if name not in props])
