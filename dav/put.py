"""PUT (RFC 4918 9.7): a contact or event written through the contacts and calendars services, ETags honoured."""
from django.http import HttpResponse

from dav.bodies import MAX_RESOURCE_BYTES, read_body
from dav.conditions import header_etags, preconditions_fail, quoted_etag
from dav.davxml import cal, card
from dav.media import VCARD_TYPES
from dav.responses import ALLOW, precondition, response
from dav.tree import BOOK, CALENDAR, CONTACT, EVENT, Node, member_named
from calendars import ical
from calendars.services import ComponentUnsupported, EventConflict, EventInvalid, event_put
from contacts import vcard
from contacts.services import ContactConflict, ContactInvalid, contact_put


def put(request, node: Node) -> HttpResponse:
    if node.kind not in (CONTACT, EVENT):
        return response("Only contacts and events can be written here.\n", status=405, headers={"Allow": ALLOW})
    body = read_body(request, MAX_RESOURCE_BYTES)
    if isinstance(body, HttpResponse):
        return body
    content_type = request.META.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
    is_contact = node.kind == CONTACT
    expected = VCARD_TYPES if is_contact else ("text/calendar",)
    if content_type and content_type not in expected:
        return response(f"Send {expected[0]} here.\n", status=415)
    data_condition = card("valid-address-data") if is_contact else cal("valid-calendar-data")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return precondition(400, data_condition)
    if preconditions_fail(request, node.obj):
        return response("The resource changed since you read it.\n", status=412)
    if_match = node.obj.etag if (node.obj is not None and "HTTP_IF_MATCH" in request.META) else None
    if_none_match = "*" in header_etags(request.META.get("HTTP_IF_NONE_MATCH", ""))
    try:
        if is_contact:
            obj, created = contact_put(book=node.collection, href=node.name, text=text, if_match=if_match,
                                       if_none_match=if_none_match)
        else:
            obj, created = event_put(calendar=node.collection, href=node.name, text=text, if_match=if_match,
                                     if_none_match=if_none_match)
    except ComponentUnsupported:
        return precondition(403, cal("supported-calendar-component"))
    except (ContactInvalid, vcard.VCardError, EventInvalid, ical.ICalError):
        return precondition(400, data_condition)
    except (ContactConflict, EventConflict):
        now = member_named(Node(BOOK if is_contact else CALENDAR, "", node.mailbox, collection=node.collection),
                           node.name).obj
        if (now.etag if now else None) != (node.obj.etag if node.obj else None):  # changed meanwhile
            return response("The resource changed since you read it.\n", status=412)
        return precondition(409, card("no-uid-conflict") if is_contact else cal("no-uid-conflict"))
    return response(status=201 if created else 204, headers={"ETag": quoted_etag(obj.etag)})
