"""MOVE (RFC 4918 9.9) of a contact, event or task to another address book or calendar of the same
mailbox (or to another name in its own): the resource keeps its data and ETag; sync clients see a
deletion in the one collection and a new resource in the other. Books and calendars keep their URLs."""
from urllib.parse import unquote, urlsplit

from django.http import HttpResponse

from dav.conditions import preconditions_fail, quoted_etag
from dav.davxml import cal, card
from dav.responses import not_found, precondition, response
from dav.tree import CONTACT, EVENT, ROOT, Node, resolve
from calendars.services import ComponentUnsupported, EventConflict, event_move
from contacts.services import ContactConflict, contact_move


def move(request, node: Node) -> HttpResponse:
    if node.kind not in (CONTACT, EVENT):
        return response("Only contacts, events and tasks can be moved; an address book or calendar keeps its "
                        "address.\n", status=403)
    if node.obj is None:
        return not_found()
    destination = request.META.get("HTTP_DESTINATION", "").strip()
    if not destination:
        return response("MOVE needs a Destination header.\n", status=400)
    parts = urlsplit(destination)
    if parts.netloc and parts.netloc.lower() != request.get_host().lower():
        return response("The destination is on another server.\n", status=502)
    path = unquote(parts.path)
    target = resolve(path[len(ROOT):], node.mailbox) if path.startswith(ROOT) else None
    if target is None or target.kind != node.kind:
        noun = "address books" if node.kind == CONTACT else "calendars"
        return response(f"The destination must be a resource in one of your {noun}.\n", status=409)
    if preconditions_fail(request, node.obj):
        return response("The resource changed since you read it.\n", status=412)
    overwrite = request.META.get("HTTP_OVERWRITE", "T").strip().upper() != "F"
    if target.obj is not None and target.obj.pk != node.obj.pk and not overwrite:
        return response("There is a resource at the destination and Overwrite is F.\n", status=412)
    try:
        if node.kind == CONTACT:
            moved, created = contact_move(contact=node.obj, book=target.collection, href=target.name)
        else:
            moved, created = event_move(event=node.obj, calendar=target.collection, href=target.name)
    except ComponentUnsupported:
        return precondition(403, cal("supported-calendar-component"))
    except (ContactConflict, EventConflict):
        return precondition(409, card("no-uid-conflict") if node.kind == CONTACT else cal("no-uid-conflict"))
    return response(status=201 if created else 204, headers={"ETag": quoted_etag(moved.etag)})
