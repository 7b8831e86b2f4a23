"""free-busy-query (RFC 4791 7.10), the one REPORT answered in iCalendar rather than in a multistatus."""
from xml.etree import ElementTree as ET

from django.http import HttpResponse

from dav.davxml import cal
from dav.reports.timerange import FAR_FUTURE, utc_stamp
from dav.responses import response
from dav.tree import Node
from calendars.selectors import calendar_free_busy


def free_busy_query(node: Node, root: ET.Element) -> HttpResponse:
    """RFC 4791 7.10: the calendar's busy time in a range as one VFREEBUSY (200, text/calendar)."""
    time_range = root.find(cal("time-range"))
    start = utc_stamp(time_range.get("start"), None) if time_range is not None else None
    end = utc_stamp(time_range.get("end"), FAR_FUTURE) if time_range is not None else None
    if start is None or end is None or end <= start:
        return response("A free-busy-query needs a time-range with a start (and an end after it), in UTC.\n",
                        status=400)
    text = calendar_free_busy(calendar=node.collection, start=start, end=end).encode()
    return response(text, content_type="text/calendar; charset=utf-8", headers={"Content-Length": str(len(text))})
