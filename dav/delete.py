"""DELETE (RFC 4918 9.6): a book or calendar with what it holds, or one contact, event or task, ETags honoured."""
from django.http import HttpResponse

from dav.conditions import preconditions_fail
from dav.responses import not_found, response
from dav.tree import BOOK, CALENDAR, CONTACT, EVENT, Node
from calendars.services import CalendarRefused, calendar_delete, event_delete
from contacts.services import AddressBookRefused, address_book_delete, contact_delete


def delete(request, node: Node) -> HttpResponse:
    if node.kind in (BOOK, CALENDAR):
        try:
            if node.kind == BOOK:
                address_book_delete(book=node.collection)
            else:
                calendar_delete(calendar=node.collection)
        except (AddressBookRefused, CalendarRefused) as exc:
            return response(f"{exc.detail}\n", status=403)
        return response(status=204)
    if node.kind not in (CONTACT, EVENT):
        return response("Only address books, calendars and what they hold can be deleted.\n", status=403)
    if node.obj is None:
        return not_found()
    if preconditions_fail(request, node.obj):
        return response("The resource changed since you read it.\n", status=412)
    if node.kind == CONTACT:
        contact_delete(contact=node.obj)
    else:
        event_delete(event=node.obj, notify=False)  # the client sends its own cancellations
    return response(status=204)
