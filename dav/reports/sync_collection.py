"""sync-collection (RFC 6578): a book's or calendar's members, or what changed since the client's sync token."""
from xml.etree import ElementTree as ET

from django.http import HttpResponse

from dav.davxml import Multistatus, d
from dav.properties import SYNC_TOKEN, Representation, add_response, report_requested, sync_token
from dav.responses import precondition, xml_response
from dav.tree import BOOK, Node, children_of, member_of, segment
from calendars.models import CalendarEvent
from mailcore.changelog import changes_since
from contacts.models import Contact


def sync_collection(request, node: Node, root: ET.Element, representation: Representation | None) -> HttpResponse:
    mode, names = report_requested(root)
    token = (root.findtext(d("sync-token")) or "").strip()
    collection = type(node.collection).objects.get(pk=node.collection.pk)  # the revision as of now
    node.collection = collection
    multistatus = Multistatus()
    if not token:
        for member in children_of(node):
            add_response(multistatus, request, member, mode, names, representation)
    else:
        match = SYNC_TOKEN.search(token)
        kind = "b" if node.kind == BOOK else "c"
        if (match is None or match["kind"] != kind or int(match["pk"]) != collection.pk
                or int(match["revision"]) > collection.revision):
            return precondition(403, d("valid-sync-token"))
        changed = changes_since(collection, int(match["revision"]))
        model, owner = (Contact, "book") if node.kind == BOOK else (CalendarEvent, "calendar")
        objects = {obj.href: obj for obj in model.objects.filter(
            **{owner: collection, "href__in": [change.href for change in changed if not change.deleted]})}
        for change in changed:
            obj = objects.get(change.href)
            if change.deleted or obj is None:
                multistatus.add(node.href + segment(change.href), status="404 Not Found")
            else:
                add_response(multistatus, request, member_of(node, obj), mode, names, representation)
    multistatus.sync_token(sync_token(request, node))
    return xml_response(multistatus.to_bytes())
