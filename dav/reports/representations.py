"""What a REPORT's calendar-data or address-data asks for beyond the stored text: an expansion or a vCard version."""
from xml.etree import ElementTree as ET

from django.http import HttpResponse

from dav.davxml import cal, card, d
from dav.media import VCARD_TYPES
from dav.properties import Representation
from dav.reports.timerange import utc_stamp
from dav.responses import precondition, response
from dav.tree import Node
from calendars import ical
from contacts import vcard


def calendar_data_request(root: ET.Element) -> Representation | None | HttpResponse:
    """What a REPORT's <C:calendar-data> asks beyond the stored text: expand (RFC 4791 9.6.5) or
    limit-recurrence-set (9.6.6) over a range; None for the stored text."""
    element = root.find(f"{d('prop')}/{cal('calendar-data')}")
    if element is None:
        return None
    if element.get("content-type", "text/calendar").lower() != "text/calendar" \
            or element.get("version", "2.0") != "2.0":
        return precondition(403, cal("supported-calendar-data"))
    for tag, shape in ((cal("expand"), ical.expand), (cal("limit-recurrence-set"), ical.limit_recurrence_set)):
        limit = element.find(tag)
        if limit is None:
            continue
        start, end = utc_stamp(limit.get("start"), None), utc_stamp(limit.get("end"), None)
        if start is None or end is None or end <= start:
            return response("expand and limit-recurrence-set need a start and a later end, in UTC.\n", status=400)

        def shaped(node: Node, shape=shape, start=start, end=end) -> str:
            try:
                return shape(node.obj.ical, start, end)
            except Exception:  # an object recurring-ical-events cannot expand: answered as stored
                return node.obj.ical
        return shaped
    return None


def address_data_request(root: ET.Element) -> Representation | None | HttpResponse:
    """The vCard version a REPORT's <CR:address-data content-type version> asks for (RFC 6352 10.4):
    the stored card converted to it; None for the stored text."""
    element = root.find(f"{d('prop')}/{card('address-data')}")
    if element is None:
        return None
    if element.get("content-type", "text/vcard").lower() not in VCARD_TYPES:
        return precondition(403, card("supported-address-data-conversion"))
    version = element.get("version")
    if version is None:
        return None
    if version not in vcard.VERSIONS:
        return precondition(403, card("supported-address-data-conversion"))
    return lambda node: vcard.as_version(node.obj.vcard, version)
