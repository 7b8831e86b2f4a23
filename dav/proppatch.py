"""PROPPATCH (RFC 4918 9.2) of address books and calendars, and the property setting that MKCALENDAR
and extended MKCOL share with it. displayname, calendar-color and calendar-timezone are live (the
webmail and REST show them); any other property a client sets (Apple's calendar-order, descriptions,
client-private ones) is kept as a dead property of the collection, bounded (mailcore.changelog), and
PROPFIND returns it; protected properties are 403. All or nothing: one refusal and the rest are 424."""
import re
from dataclasses import dataclass, field
from xml.etree import ElementTree as ET

import icalendar
from django.db import transaction
from django.http import HttpResponse

from dav import davxml
from dav.bodies import xml_body
from dav.davxml import ICAL, Multistatus, cal, d
from dav.properties import DESCRIPTIONS, properties
from dav.responses import response, xml_response
from dav.tree import BOOK, CALENDAR, Node
from calendars import ical
from calendars.services import calendar_update
from mailcore.changelog import dead_properties_refusals, dead_properties_update
from contacts.services import address_book_update

COLOR = f"{{{ICAL}}}calendar-color"
TIMEZONE = cal("calendar-timezone")
LIVE_WRITABLE = {d("displayname"), COLOR, TIMEZONE}
COLOR_VALUE = re.compile(r"#[0-9a-fA-F]{6}([0-9a-fA-F]{2})?")


@dataclass
class PropertyPlan:
    """What one PROPPATCH (or the set of a MKCALENDAR) would change, and what it refuses."""
    names: list[str] = field(default_factory=list)
    live: dict[str, str] = field(default_factory=dict)  # calendar_update / address_book_update arguments
    dead_set: dict[str, str] = field(default_factory=dict)
    dead_remove: list[str] = field(default_factory=list)
    refused: dict[str, tuple[int, str]] = field(default_factory=dict)  # name -> (status, reason)


def instructions_of(root: ET.Element) -> list[tuple[bool, ET.Element]]:
    """(removing, property element) for each property of a propertyupdate, mkcalendar or mkcol body, in order."""
    found = []
    for instruction in root:
        if instruction.tag not in (d("set"), d("remove")):
            continue
        for prop in instruction.findall(d("prop")):
            found.extend((instruction.tag == d("remove"), element) for element in prop)
    return found


def _zone_of(text: str) -> str | None:
    """The IANA zone a calendar-timezone value (a VCALENDAR with one VTIMEZONE) names, if it is one."""
    try:
        zones = icalendar.Calendar.from_ical(text).walk("VTIMEZONE")
        name = str(zones[0]["TZID"]) if zones else ""
        ical.zone(name)
    except Exception:  # not iCalendar, no zone, or not an IANA name: kept as the client wrote it
        return None
    return name or None


def property_plan(request, node: Node, instructions: list[tuple[bool, ET.Element]]) -> PropertyPlan:
    plan = PropertyPlan()
    if node.kind not in (BOOK, CALENDAR):
        for _, element in instructions:
            plan.names.append(element.tag)
            plan.refused[element.tag] = (403, "Properties can be set on address books and calendars only.")
        return plan
    protected = set(properties(request, node)) - LIVE_WRITABLE - set(DESCRIPTIONS) - set(node.collection.properties)
    for removing, element in instructions:
        name = element.tag
        plan.names.append(name)
        value = (element.text or "").strip()
        if name in protected or (name == TIMEZONE and node.kind == BOOK):
            plan.refused[name] = (403, "A protected property: the server keeps it.")
        elif name == d("displayname"):
            if removing:
                continue
            if not value:
                plan.refused[name] = (403, "A collection needs a name.")
            else:
                plan.live["name"] = value[:100]
        elif name == COLOR:
            if removing:
                continue
            if not COLOR_VALUE.fullmatch(value):
                plan.refused[name] = (403, "A colour is #rrggbb or #rrggbbaa.")
            else:
                plan.live["color"] = value[:7].lower()
        elif name == TIMEZONE:
            zone = "" if removing else _zone_of(element.text or "")
            plan.live["timezone"] = zone or ""
            if zone is None:
                plan.dead_set[name] = davxml.to_text(element)
            else:
                plan.dead_remove.append(name)
        elif removing:
            plan.dead_remove.append(name)
            plan.dead_set.pop(name, None)
        else:
            plan.dead_set[name] = davxml.to_text(element)
            if name in plan.dead_remove:
                plan.dead_remove.remove(name)
    if node.collection is not None:
        plan.refused.update(dead_properties_refusals(node.collection, set_=plan.dead_set, remove=plan.dead_remove))
    return plan


@transaction.atomic
def plan_apply(node: Node, plan: PropertyPlan) -> None:
    collection = node.collection
    if plan.live:
        if node.kind == CALENDAR:
            calendar_update(calendar=collection, **plan.live)
        else:
            address_book_update(book=collection, **plan.live)
    if plan.dead_set or plan.dead_remove:
        dead_properties_update(collection, set_=plan.dead_set, remove=plan.dead_remove)


def plan_answer(multistatus: Multistatus, href: str, plan: PropertyPlan) -> None:
    """The propstats of a plan: 200 for all, or each refusal with its reason and 424 for the rest."""
    if not plan.refused:
        multistatus.add(href, found={name: davxml.empty for name in dict.fromkeys(plan.names)})
        return
    statuses: dict[str, list[str]] = {}
    why: dict[str, dict[str, None]] = {}
    for name, (code, reason) in plan.refused.items():
        label = f"{code} {'Insufficient Storage' if code == 507 else 'Forbidden'}"
        statuses.setdefault(label, []).append(name)
        why.setdefault(label, {})[reason] = None
    reasons = {label: " ".join(texts) for label, texts in why.items()}
    failed = [name for name in dict.fromkeys(plan.names) if name not in plan.refused]
    if failed:
        statuses["424 Failed Dependency"] = failed
        reasons["424 Failed Dependency"] = "Not changed: another property of this request was refused."
    multistatus.add(href, statuses=statuses, reasons=reasons)


def proppatch(request, node: Node) -> HttpResponse:
    root = xml_body(request)
    if isinstance(root, HttpResponse):
        return root
    if root is None or root.tag != d("propertyupdate"):
        return response("Expected a DAV:propertyupdate body.\n", status=400)
    if node.obj is None and not node.is_collection:
        return response("Not found.\n", status=404)
    plan = property_plan(request, node, instructions_of(root))
    if not plan.refused:
        plan_apply(node, plan)
    multistatus = Multistatus()
    plan_answer(multistatus, node.href, plan)
    return xml_response(multistatus.to_bytes())
