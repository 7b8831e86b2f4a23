"""MKCALENDAR (RFC 4791 5.3.1) and extended MKCOL (RFC 5689): a client makes another calendar or
address book in the mailbox's calendar or address book home, with its properties set in the same
request (displayname, calendar-color, supported-calendar-component-set, Apple's calendar-order...).
The URL segment the client chose is the collection's; a property refused undoes the whole request."""
from django.db import transaction
from django.http import HttpResponse

from dav.bodies import xml_body
from dav.davxml import Multistatus, cal, card, d
from dav.proppatch import instructions_of, plan_answer, plan_apply, property_plan
from dav.responses import precondition, response, xml_response
from dav.tree import BOOK, CALENDAR, Node
from calendars.models import COMPONENTS
from calendars.services import CalendarRefused, CalendarTaken, EventInvalid, calendar_create
from contacts.services import AddressBookRefused, AddressBookTaken, ContactInvalid, address_book_create

RESOURCETYPE = d("resourcetype")
COMPONENT_SET = cal("supported-calendar-component-set")


class _Undo(Exception):
    """Leaves the atomic block so the collection made for a refused request is rolled back."""


def _resourcetype(instructions) -> set[str] | None:
    for removing, element in instructions:
        if element.tag == RESOURCETYPE and not removing:
            return {child.tag for child in element}
    return None


def mkcol(request, node: Node) -> HttpResponse:
    root = xml_body(request)
    if isinstance(root, HttpResponse):
        return root
    calendar_method = request.method == "MKCALENDAR"
    if node.kind not in (BOOK, CALENDAR):
        if node.is_collection or node.obj is not None:
            return response("There is a resource at this address already.\n", status=405)
        return response("Address books and calendars are made in your address book or calendar home.\n", status=403)
    if node.collection is not None:
        return response("There is a collection at this address already.\n", status=405)
    expected = cal("mkcalendar") if calendar_method else d("mkcol")
    if root is not None and root.tag != expected:
        return response(f"Expected a {expected} body.\n", status=400)
    instructions = instructions_of(root) if root is not None else []
    if calendar_method and node.kind != CALENDAR:
        return precondition(403, cal("calendar-collection-location-ok"))
    if not calendar_method:
        wanted = card("addressbook") if node.kind == BOOK else cal("calendar")
        types = _resourcetype(instructions)
        if types is None or wanted not in types or not types <= {d("collection"), wanted}:
            return precondition(403, d("valid-resourcetype"))
    components = list(COMPONENTS)
    for removing, element in instructions:
        if element.tag == COMPONENT_SET and not removing:
            components = [(comp.get("name") or "").upper() for comp in element.findall(cal("comp"))]
            if not components or any(name not in COMPONENTS for name in components):
                return precondition(403, cal("supported-calendar-component"))
    rest = [(removing, element) for removing, element in instructions
            if element.tag not in (RESOURCETYPE, COMPONENT_SET)]
    name = next((element.text.strip() for removing, element in rest
                 if element.tag == d("displayname") and not removing and (element.text or "").strip()), node.name)
    try:
        with transaction.atomic():
            account, mailbox = node.mailbox.account, node.mailbox
            if node.kind == CALENDAR:
                node.collection = calendar_create(account=account, mailbox=mailbox, name=name, slug=node.name,
                                                  components=components)
            else:
                node.collection = address_book_create(account=account, mailbox=mailbox, name=name, slug=node.name)
            plan = property_plan(request, node, rest)
            if plan.refused:
                raise _Undo
            plan_apply(node, plan)
    except _Undo:
        multistatus = Multistatus()
        plan_answer(multistatus, node.href, plan)
        tag = cal("mkcalendar-response") if calendar_method else d("mkcol-response")
        return xml_response(multistatus.as_root(tag).to_bytes(), status=403)
    except (CalendarTaken, AddressBookTaken):
        return response("There is a collection at this address already.\n", status=405)
    except (CalendarRefused, AddressBookRefused) as exc:
        return response(f"{exc.detail}\n", status=507)
    except (EventInvalid, ContactInvalid) as exc:
        return response(f"{exc.detail}\n", status=403)
    return response(status=201, headers={"Content-Length": "0", "Cache-Control": "no-cache"})
