"""REPORT (RFC 3253 3.6) on a book or calendar: the body's root names the report, dav/reports/ answers it."""
from django.http import HttpResponse

from dav.bodies import xml_body
from dav.davxml import cal, card, d
from dav.reports.addressbook_query import addressbook_query
from dav.reports.calendar_query import calendar_query
from dav.reports.free_busy_query import free_busy_query
from dav.reports.multiget import multiget
from dav.reports.representations import address_data_request, calendar_data_request
from dav.reports.sync_collection import sync_collection
from dav.responses import precondition, response
from dav.tree import BOOK, CALENDAR, Node


def report(request, node: Node) -> HttpResponse:
    root = xml_body(request)
    if isinstance(root, HttpResponse):
        return root
    if root is None:
        return response("A REPORT needs a body.\n", status=400)
    if node.kind not in (BOOK, CALENDAR):
        return precondition(403, d("supported-report"))
    book = node.kind == BOOK
    if not book and root.tag == cal("free-busy-query"):
        return free_busy_query(node, root)
    handlers = {d("sync-collection"): sync_collection}
    if book:
        handlers |= {card("addressbook-multiget"): multiget, card("addressbook-query"): addressbook_query}
    else:
        handlers |= {cal("calendar-multiget"): multiget, cal("calendar-query"): calendar_query}
    handler = handlers.get(root.tag)
    if handler is None:
        return precondition(403, d("supported-report"))
    representation = address_data_request(root) if book else calendar_data_request(root)
    if isinstance(representation, HttpResponse):
        return representation
    return handler(request, node, root, representation)
