"""calendar-query (RFC 4791 7.8): the events and tasks that pass the comp-filters, time ranges and prop-filters."""
from xml.etree import ElementTree as ET

import icalendar
from django.http import HttpResponse

from dav.davxml import Multistatus, cal
from dav.properties import Representation, add_response, report_requested
from dav.reports.textmatch import text_matches
from dav.reports.timerange import FAR_FUTURE, FAR_PAST, utc_stamp
from dav.responses import xml_response
from dav.tree import Node, member_of
from calendars.models import Calendar, CalendarEvent
from calendars.selectors import calendar_objects, objects_in_range, tasks_in_range


def _ical_values(component, name: str) -> list[str]:
    value = component.get(name)
    if value is None:
        return []
    values = value if isinstance(value, list) else [value]
    return [str(item.to_ical().decode() if hasattr(item, "to_ical") and not isinstance(item, str) else item)
            for item in values]


def _props_match(event: CalendarEvent, component: str, prop_filters: list[ET.Element]) -> bool:
    """A comp-filter's prop-filters against the components of that type in one stored resource."""
    try:
        components = icalendar.Calendar.from_ical(event.ical).walk(component)
    except ValueError:
        return False
    for prop_filter in prop_filters:
        name = prop_filter.get("name", "").upper()
        found = [value for each in components for value in _ical_values(each, name)]
        if prop_filter.find(cal("is-not-defined")) is not None:
            if found:
                return False
            continue
        if not found:
            return False
        for match in prop_filter.findall(cal("text-match")):
            if not any(text_matches(value, match, "i;ascii-casemap") for value in found):
                return False
    return True


def _component_matches(calendar: Calendar, comp_filter: ET.Element) -> list[CalendarEvent]:
    """The resources one component filter inside VCALENDAR (VEVENT, VTODO...) selects, in start order:
    the time range through the stored range (series alone expanded), then any property filters."""
    component = comp_filter.get("name", "").upper()
    objects = calendar_objects(calendar=calendar, component=component)
    if objects is not None:  # what a REPORT answers with, and what the range needs
        objects = objects.defer("title", "description", "location", "color", "organizer", "attendees", "sequence",
                                "created_at")
    if comp_filter.find(cal("is-not-defined")) is not None:
        excluded = set(objects.values_list("pk", flat=True)) if objects is not None else set()
        return [event for event in calendar.events.order_by("start", "pk") if event.pk not in excluded]
    if objects is None:
        return []  # a component type this calendar does not hold
    time_range = comp_filter.find(cal("time-range"))
    if time_range is not None:
        in_range = tasks_in_range if component == CalendarEvent.Component.TASK else objects_in_range
        found = in_range(objects, utc_stamp(time_range.get("start"), FAR_PAST),
                         utc_stamp(time_range.get("end"), FAR_FUTURE))
    else:
        found = list(objects.order_by("start", "pk"))
    prop_filters = comp_filter.findall(cal("prop-filter"))
    if prop_filters:
        found = [event for event in found if _props_match(event, component, prop_filters)]
    return found


def calendar_query(request, node: Node, root: ET.Element, representation: Representation | None) -> HttpResponse:
    mode, names = report_requested(root)
    top = root.find(f"{cal('filter')}/{cal('comp-filter')}")
    if top is None:
        found = list(node.collection.events.order_by("start", "pk"))
    elif top.get("name", "").upper() != "VCALENDAR":
        found = []
    else:
        found = None
        for comp_filter in top.findall(cal("comp-filter")):  # all of them must match
            matched = _component_matches(node.collection, comp_filter)
            selected = {event.pk for event in matched}
            found = matched if found is None else [event for event in found if event.pk in selected]
        if found is None:
            found = list(node.collection.events.order_by("start", "pk"))
    multistatus = Multistatus()
    for event in found:
        add_response(multistatus, request, member_of(node, event), mode, names, representation)
    return xml_response(multistatus.to_bytes())
