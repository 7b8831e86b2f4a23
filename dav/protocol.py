"""CardDAV and CalDAV (RFC 4918, 6352, 4791, 6578, 5397, 6764) over the one model of contacts and
events that REST and webmail use: every read goes through mailcore's selectors and every write
through its services, so a change made here is logged for every other client and the other way round.

Each managed mailbox has a default address book and calendar (`contacts/`, `calendar/`, made on first
use) and may have more, made by clients (MKCALENDAR, extended MKCOL), REST or the webmail:

    /dav/                                        root (current-user-principal)
    /dav/principals/<address>/                   the mailbox's principal
    /dav/addressbooks/<address>/<book>/<name>    its address books and contacts (plan feature `contacts`)
    /dav/calendars/<address>/<calendar>/<name>   its calendars, events and tasks (plan feature `calendar`)

This module walks the tree and answers PROPFIND, GET, PUT, DELETE and REPORT; PROPPATCH, MKCOL and
MKCALENDAR, and MOVE have modules of their own (dav/proppatch.py, dav/mkcol.py, dav/move.py), and
dav/views.py dispatches.

Clients sign in with HTTP Basic: the mailbox address and the mailbox password. A path naming any
other address is 404, like every path that does not exist."""
import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote, unquote, urlsplit
from xml.etree import ElementTree as ET

import icalendar
from django.conf import settings
from django.http import HttpResponse
from django.utils.http import http_date

from dav import davxml
from dav.davxml import CS, ICAL, Multistatus, XmlRefused, cal, card, d
from mailcore.accounts.selectors import plan_gate_message
from calendars import ical
from calendars.models import Calendar, CalendarEvent
from calendars.selectors import (
    calendar_by_slug, calendar_free_busy, calendar_list, calendar_objects, objects_in_range, tasks_in_range,
)
from calendars.services import (
    CalendarRefused, ComponentUnsupported, EventConflict, EventInvalid, calendar_delete, calendar_export, calendar_for,
    event_delete, event_put,
)
from mailcore.changelog import changes_since
from contacts import vcard
from contacts.models import AddressBook, Contact
from contacts.selectors import address_book_by_slug, address_book_list
from contacts.services import (
    AddressBookRefused, ContactConflict, ContactInvalid, address_book_delete, address_book_for, contact_delete,
    contact_put, contacts_export,
)
from mailcore.ipnets import client_ip
from mailcore.mailboxes.models import Mailbox
from mailcore.mailboxes.passwords import mailbox_password_verify_repeated
from mailcore.throttle import MAILBOX_LOGIN, LoginThrottled, throttle_attempt, throttle_forgive, throttle_keys
from webmail.sessions import mailbox_of_partner

ROOT = "/dav/"
REALM = "Mailwell"
MAX_RESOURCE_BYTES = 1_000_000  # a vCard with a photo, an event with its overrides
MAX_XML_BYTES = 256 * 1024  # a PROPFIND or REPORT body
DAV_CLASSES = "1, 3, addressbook, calendar-access, extended-mkcol"
ALLOW = "OPTIONS, GET, HEAD, PUT, DELETE, PROPFIND, PROPPATCH, REPORT, MKCOL, MKCALENDAR, MOVE"
SYNC_TOKEN = re.compile(r"/ns/sync/(?P<kind>[bc])(?P<pk>\d+)-(?P<revision>\d+)$")
VCARD_TYPES = ("text/vcard", "text/x-vcard", "text/directory")
FAR_PAST = datetime(1900, 1, 1, tzinfo=UTC)
FAR_FUTURE = datetime(2200, 1, 1, tzinfo=UTC)

# Kinds of resource, by where they sit in the tree.
ROOT_KIND, PRINCIPALS, PRINCIPAL = "root", "principals", "principal"
BOOKS, BOOK_HOME, BOOK, CONTACT = "addressbooks", "addressbook-home", "addressbook", "contact"
CALENDARS, CAL_HOME, CALENDAR, EVENT = "calendars", "calendar-home", "calendar", "event"
COLLECTION_KINDS = {ROOT_KIND, PRINCIPALS, PRINCIPAL, BOOKS, BOOK_HOME, BOOK, CALENDARS, CAL_HOME, CALENDAR}
FEATURE = {BOOKS: "contacts", BOOK_HOME: "contacts", BOOK: "contacts", CONTACT: "contacts",
           CALENDARS: "calendar", CAL_HOME: "calendar", CALENDAR: "calendar", EVENT: "calendar"}


@dataclass
class Node:
    """One resource of the tree as the signed-in mailbox sees it."""

    kind: str
    href: str  # the canonical path, percent-encoded where needed
    mailbox: Mailbox
    collection: AddressBook | Calendar | None = None  # None for a book or calendar not made yet (MKCOL's target)
    name: str = ""  # a contact's or event's resource name; a book's or calendar's URL segment
    obj: Contact | CalendarEvent | None = None

    @property
    def is_collection(self) -> bool:
        return self.kind in COLLECTION_KINDS


# --- HTTP plumbing ---------------------------------------------------------------------------

def _response(body: bytes | str = b"", *, status: int = 200, content_type: str = "text/plain; charset=utf-8",
              headers: dict[str, str] | None = None) -> HttpResponse:
    response = HttpResponse(body, status=status, content_type=content_type)
    response["DAV"] = DAV_CLASSES
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def _xml(body: bytes, *, status: int = 207) -> HttpResponse:
    return _response(body, status=status, content_type="application/xml; charset=utf-8")


def _precondition(status: int, *conditions: str) -> HttpResponse:
    return _xml(davxml.error(*conditions), status=status)


def _not_found() -> HttpResponse:
    return _response("Not found.\n", status=404)


def _challenge() -> HttpResponse:
    return _response("Sign in with your mailbox address and mailbox password.\n", status=401,
                     headers={"WWW-Authenticate": f'Basic realm="{REALM}", charset="UTF-8"'})


def _quoted_etag(etag: str) -> str:
    return f'"{etag}"'


def _etags(header: str) -> list[str]:
    """The entity tags of an If-Match / If-None-Match header, without quotes ("*" kept as is)."""
    return [part.strip().removeprefix("W/").strip('"') for part in header.split(",") if part.strip()]


# --- Signing in ------------------------------------------------------------------------------

def _credentials(request) -> tuple[str, str] | None:
    scheme, _, value = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    address, colon, password = decoded.partition(":")
    return (address.strip(), password) if colon and address.strip() else None


def _partner_id(request) -> int | None:
    """The partner whose webmail hostname the request came in on (set by the webmail host middleware)."""
    brand = getattr(request, "webmail_brand", None)
    return getattr(brand, "partner_id", None)


def _sign_in(request) -> Mailbox | HttpResponse:
    credentials = _credentials(request)
    if credentials is None:
        return _challenge()
    address, password = credentials
    keys = throttle_keys(MAILBOX_LOGIN, address, client_ip(request.META, settings.TRUSTED_PROXY_COUNT))
    try:
        throttle_attempt(keys)
    except LoginThrottled as exc:
        return _response(f"{exc.detail}\n", status=429, headers={"Retry-After": str(exc.retry_after)})
    mailbox = (Mailbox.objects.select_related("plan", "account__plan")
               .filter(address__iexact=address, kind=Mailbox.Kind.MANAGED).first())
    ok = mailbox_password_verify_repeated(password, mailbox.password_hash if mailbox is not None else None)
    partner_id = _partner_id(request)
    if not ok or (partner_id is not None and not mailbox_of_partner(mailbox, partner_id)):
        return _challenge()
    throttle_forgive(keys)
    if not mailbox.is_active:
        return _response("This mailbox is switched off.\n", status=403)
    return mailbox


def _gate(mailbox: Mailbox, kind: str) -> HttpResponse | None:
    """403 naming the plan when the mailbox's plan lacks what this part of the tree serves."""
    plan = mailbox.effective_plan
    if kind in FEATURE:
        feature = FEATURE[kind]
        if not plan.has_feature(feature):
            return _response(plan_gate_message(feature) + "\n", status=403)
    elif not (plan.has_feature("contacts") or plan.has_feature("calendar")):
        return _response(plan_gate_message("contacts") + "\n", status=403)
    return None


# --- The tree --------------------------------------------------------------------------------

def _segment(value: str) -> str:
    return quote(value, safe="@:+-._~!$&'()*,;=")


def _principal_href(mailbox: Mailbox) -> str:
    return f"{ROOT}principals/{_segment(mailbox.address)}/"


def _book_home_href(mailbox: Mailbox) -> str:
    return f"{ROOT}addressbooks/{_segment(mailbox.address)}/"


def _calendar_home_href(mailbox: Mailbox) -> str:
    return f"{ROOT}calendars/{_segment(mailbox.address)}/"


def _book_node(mailbox: Mailbox, book: AddressBook) -> Node:
    return Node(BOOK, _book_home_href(mailbox) + _segment(book.slug) + "/", mailbox, collection=book, name=book.slug)


def _calendar_node(mailbox: Mailbox, calendar: Calendar) -> Node:
    return Node(CALENDAR, _calendar_home_href(mailbox) + _segment(calendar.slug) + "/", mailbox, collection=calendar,
                name=calendar.slug)


def _collection_node(mailbox: Mailbox, kind: str, slug: str) -> Node:
    """The book or calendar at this URL segment (the default one made on first use); its collection
    is None when there is none there yet."""
    account = mailbox.account
    if kind == BOOK:
        home, first_use, by_slug = _book_home_href(mailbox), address_book_for, address_book_by_slug
    else:
        home, first_use, by_slug = _calendar_home_href(mailbox), calendar_for, calendar_by_slug
    default = first_use(account=account, mailbox=mailbox)
    collection = default if slug == default.slug else by_slug(account=account, mailbox=mailbox, slug=slug)
    return Node(kind, home + _segment(slug) + "/", mailbox, collection=collection, name=slug)


def _member(collection: Node, obj: Contact | CalendarEvent) -> Node:
    kind = CONTACT if collection.kind == BOOK else EVENT
    return Node(kind, collection.href + _segment(obj.href), collection.mailbox, collection=collection.collection,
                name=obj.href, obj=obj)


def _named_member(collection: Node, name: str) -> Node:
    """The member of that resource name (obj None when there is none yet: PUT makes it)."""
    model = Contact if collection.kind == BOOK else CalendarEvent
    owner = "book" if collection.kind == BOOK else "calendar"
    obj = model.objects.filter(**{owner: collection.collection, "href": name}).first()
    if obj is not None:
        return _member(collection, obj)
    kind = CONTACT if collection.kind == BOOK else EVENT
    return Node(kind, collection.href + _segment(name), collection.mailbox, collection=collection.collection, name=name)


def _valid_name(name: str) -> bool:
    return 0 < len(name) <= 255 and "/" not in name and name not in (".", "..") and name.isprintable()


def _resolve(path: str, mailbox: Mailbox) -> Node | None:
    """The node a request path names for this mailbox; None (404) for anything else, another
    mailbox's paths included."""
    parts = [part for part in path.split("/") if part]
    if not parts:
        return Node(ROOT_KIND, ROOT, mailbox)
    top, rest = parts[0], parts[1:]
    if top not in (PRINCIPALS, BOOKS, CALENDARS):
        return None
    if not rest:
        return Node(top, f"{ROOT}{top}/", mailbox)
    if rest[0].lower() != mailbox.address.lower():
        return None
    if top == PRINCIPALS:
        return Node(PRINCIPAL, _principal_href(mailbox), mailbox) if len(rest) == 1 else None
    home_kind, home_href, kind = ((BOOK_HOME, _book_home_href(mailbox), BOOK) if top == BOOKS
                                  else (CAL_HOME, _calendar_home_href(mailbox), CALENDAR))
    if len(rest) == 1:
        return Node(home_kind, home_href, mailbox)
    if len(rest) > 3 or not _valid_name(rest[1]):
        return None
    collection = _collection_node(mailbox, kind, rest[1])
    if len(rest) == 2:
        return collection
    if collection.collection is None:
        return None
    return _named_member(collection, rest[2]) if _valid_name(rest[2]) else None


def _features(mailbox: Mailbox) -> tuple[bool, bool]:
    plan = mailbox.effective_plan
    return plan.has_feature("contacts"), plan.has_feature("calendar")


def _children(node: Node) -> list[Node]:
    mailbox = node.mailbox
    contacts, calendar = _features(mailbox)
    if node.kind in (ROOT_KIND, PRINCIPALS):
        return [Node(PRINCIPAL, _principal_href(mailbox), mailbox)]
    if node.kind == BOOKS:
        return [Node(BOOK_HOME, _book_home_href(mailbox), mailbox)]
    if node.kind == CALENDARS:
        return [Node(CAL_HOME, _calendar_home_href(mailbox), mailbox)]
    if node.kind == BOOK_HOME:
        address_book_for(account=mailbox.account, mailbox=mailbox)
        return [_book_node(mailbox, book) for book in address_book_list(account=mailbox.account, mailbox=mailbox)]
    if node.kind == CAL_HOME:
        calendar_for(account=mailbox.account, mailbox=mailbox)
        return [_calendar_node(mailbox, calendar)
                for calendar in calendar_list(account=mailbox.account, mailbox=mailbox)]
    if node.kind == BOOK:
        return [_member(node, contact) for contact in node.collection.contacts.order_by("href")]
    if node.kind == CALENDAR:
        return [_member(node, event) for event in node.collection.events.order_by("href")]
    return []


# --- Properties ------------------------------------------------------------------------------

EXPENSIVE = {card("address-data"), cal("calendar-data")}  # only when asked for by name
READ_ONLY = ("read", "read-current-user-privilege-set")
READ_WRITE = ("read", "write", "write-properties", "write-content", "bind", "unbind",
              "read-current-user-privilege-set")
HOME = ("read", "bind", "unbind", "read-current-user-privilege-set")  # books and calendars are made and deleted in it


def _sync_token(request, node: Node) -> str:
    kind = "b" if node.kind == BOOK else "c"
    return f"https://{request.get_host()}/ns/sync/{kind}{node.collection.pk}-{node.collection.revision}"


def _timezone_text(name: str) -> str | None:
    if not name:
        return None
    try:
        calendar = icalendar.Calendar()
        calendar.add("prodid", ical.PRODID)
        calendar.add("version", "2.0")
        calendar.add_component(icalendar.Timezone.from_tzid(name))
        return calendar.to_ical().decode()
    except Exception:  # an unknown or odd zone: the property is simply not there
        return None


def _properties(request, node: Node) -> dict[str, davxml.Fill]:
    """Every property the node has, by Clark name."""
    mailbox = node.mailbox
    principal = _principal_href(mailbox)
    props: dict[str, davxml.Fill] = {
        d("current-user-principal"): davxml.hrefs(principal),
        d("principal-collection-set"): davxml.hrefs(f"{ROOT}principals/"),
        d("owner"): davxml.hrefs(principal),
    }
    if node.is_collection:
        props[d("resourcetype")] = davxml.children(d("collection"))
    else:
        props[d("resourcetype")] = davxml.empty
    writable = node.kind in (BOOK, CALENDAR, CONTACT, EVENT)
    privileges = READ_WRITE if writable else HOME if node.kind in (BOOK_HOME, CAL_HOME) else READ_ONLY
    props[d("current-user-privilege-set")] = davxml.privileges(*privileges)

    if node.kind == PRINCIPAL:
        contacts, calendar = _features(mailbox)
        props[d("resourcetype")] = davxml.children(d("collection"), d("principal"))
        props[d("displayname")] = davxml.text(mailbox.display_name or mailbox.address)
        props[d("principal-URL")] = davxml.hrefs(principal)
        addresses = [f"mailto:{mailbox.address}"] + [f"mailto:{alias.address}" for alias in mailbox.aliases.all()]
        props[cal("calendar-user-address-set")] = davxml.hrefs(*addresses)
        if contacts:
            props[card("addressbook-home-set")] = davxml.hrefs(_book_home_href(mailbox))
        if calendar:
            props[cal("calendar-home-set")] = davxml.hrefs(_calendar_home_href(mailbox))
    elif node.kind == ROOT_KIND:
        props[d("displayname")] = davxml.text("Mailwell CardDAV/CalDAV")
    elif node.kind in (BOOK_HOME, CAL_HOME):
        props[d("displayname")] = davxml.text(mailbox.address)
    elif node.kind in (BOOK, CALENDAR):
        collection = node.collection
        props[d("displayname")] = davxml.text(collection.name)
        props[d("sync-token")] = davxml.text(_sync_token(request, node))
        props[f"{{{CS}}}getctag"] = davxml.text(str(collection.revision))
        props[d("getetag")] = davxml.text(_quoted_etag(f"{node.kind}-{collection.pk}-{collection.revision}"))
        if node.kind == BOOK:
            props[d("resourcetype")] = davxml.children(d("collection"), card("addressbook"))
            props[card("addressbook-description")] = davxml.text(f"Contacts of {mailbox.address}")
            props[card("supported-address-data")] = _address_data_types
            props[card("max-resource-size")] = davxml.text(str(MAX_RESOURCE_BYTES))
            props[f"{{{ICAL}}}calendar-color"] = davxml.text(collection.color)
            props[d("supported-report-set")] = davxml.reports(
                card("addressbook-multiget"), card("addressbook-query"), d("sync-collection"))
        else:
            props[d("resourcetype")] = davxml.children(d("collection"), cal("calendar"))
            props[cal("calendar-description")] = davxml.text(f"Calendar of {mailbox.address}")
            props[cal("supported-calendar-component-set")] = _components(collection.component_set)
            props[cal("supported-calendar-data")] = _calendar_data_types
            props[cal("max-resource-size")] = davxml.text(str(MAX_RESOURCE_BYTES))
            props[f"{{{ICAL}}}calendar-color"] = davxml.text(collection.color)
            props[d("supported-report-set")] = davxml.reports(
                cal("calendar-multiget"), cal("calendar-query"), cal("free-busy-query"), d("sync-collection"))
            zone_text = _timezone_text(collection.timezone)
            if zone_text:
                props[cal("calendar-timezone")] = davxml.text(zone_text)
        for name, stored in collection.properties.items():  # what clients set (descriptions included)
            if name not in props or name in DESCRIPTIONS:
                props[name] = davxml.stored(stored)
    elif node.kind in (CONTACT, EVENT) and node.obj is not None:
        obj = node.obj
        stored = obj.vcard if node.kind == CONTACT else obj.ical
        props[d("getetag")] = davxml.text(_quoted_etag(obj.etag))
        props[d("getcontenttype")] = davxml.text(_content_type(node))
        props[d("getcontentlength")] = davxml.text(str(len(stored.encode())))
        props[d("getlastmodified")] = davxml.text(http_date(obj.updated_at.timestamp()))
        props[card("address-data") if node.kind == CONTACT else cal("calendar-data")] = davxml.text(stored)
    return props


def _address_data_types(element: ET.Element) -> None:
    for version in ("3.0", "4.0"):
        ET.SubElement(element, card("address-data-type"), {"content-type": "text/vcard", "version": version})


def _calendar_data_types(element: ET.Element) -> None:
    ET.SubElement(element, cal("calendar-data"), {"content-type": "text/calendar", "version": "2.0"})


DESCRIPTIONS = (card("addressbook-description"), cal("calendar-description"))  # live until a client sets one


def _components(names: list[str]) -> davxml.Fill:
    def fill(element: ET.Element) -> None:
        for name in names:
            ET.SubElement(element, cal("comp"), {"name": name})
    return fill


def _content_type(node: Node) -> str:
    if node.kind in (CONTACT, BOOK):
        return "text/vcard; charset=utf-8"
    if node.kind == EVENT and node.obj is not None:
        return f"text/calendar; charset=utf-8; component={node.obj.component}"
    return "text/calendar; charset=utf-8"


def _requested(root: ET.Element | None) -> tuple[str, list[str]]:
    """What a PROPFIND (or a REPORT's prop list) asks for: ("allprop"|"propname"|"prop", names)."""
    if root is None:
        return "allprop", []
    if root.find(d("propname")) is not None:
        return "propname", []
    prop = root.find(d("prop"))
    if prop is not None:
        return "prop", [child.tag for child in prop]
    return "allprop", []


def _add_response(multistatus: Multistatus, request, node: Node, mode: str, names: list[str],
                  representation: Callable[[Node], str] | None = None) -> None:
    props = _properties(request, node)
    if representation is not None and node.obj is not None:
        data = card("address-data") if node.kind == CONTACT else cal("calendar-data")
        if data in names:
            props[data] = davxml.text(representation(node))
    if mode == "propname":
        multistatus.add(node.href, found={name: davxml.empty for name in props})
    elif mode == "allprop":
        multistatus.add(node.href, found={name: fill for name, fill in props.items() if name not in EXPENSIVE})
    else:
        found = {name: props[name] for name in names if name in props}
        multistatus.add(node.href, found=found, missing=[name for name in names if name not in props])


# --- Methods ---------------------------------------------------------------------------------

def _body(request, limit: int) -> bytes | HttpResponse:
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return _response("Bad Content-Length.\n", status=400)
    if length > limit:
        return _response(f"The request body may be at most {limit} bytes.\n", status=413)
    body = request.body
    if len(body) > limit:
        return _response(f"The request body may be at most {limit} bytes.\n", status=413)
    return body


def _xml_body(request) -> ET.Element | None | HttpResponse:
    body = _body(request, MAX_XML_BYTES)
    if isinstance(body, HttpResponse):
        return body
    try:
        return davxml.parse(body)
    except XmlRefused:
        return _response("The request body is not acceptable XML (DTDs and entities are refused).\n", status=400)


def _options(request) -> HttpResponse:
    return _response(headers={"Allow": ALLOW, "Content-Length": "0"})


def _propfind(request, node: Node) -> HttpResponse:
    depth = request.META.get("HTTP_DEPTH", "0").strip().lower()
    if depth not in ("0", "1"):
        return _precondition(403, d("propfind-finite-depth"))
    root = _xml_body(request)
    if isinstance(root, HttpResponse):
        return root
    if node.obj is None and not node.is_collection:
        return _not_found()
    mode, names = _requested(root)
    multistatus = Multistatus()
    nodes = [node] + (_children(node) if depth == "1" else [])
    for each in nodes:
        if each.kind in FEATURE and not _allowed(each):
            continue
        _add_response(multistatus, request, each, mode, names)
    return _xml(multistatus.to_bytes())


def _allowed(node: Node) -> bool:
    return node.mailbox.effective_plan.has_feature(FEATURE[node.kind])


def _get(request, node: Node) -> HttpResponse:
    head = request.method == "HEAD"
    if node.kind in (CONTACT, EVENT):
        if node.obj is None:
            return _not_found()
        obj = node.obj
        etag = _quoted_etag(obj.etag)
        headers = {"ETag": etag, "Last-Modified": http_date(obj.updated_at.timestamp())}
        if obj.etag in _etags(request.META.get("HTTP_IF_NONE_MATCH", "")):
            return _response(status=304, headers=headers)
        stored = obj.vcard if node.kind == CONTACT else obj.ical
        version = _accepted_vcard_version(request.META.get("HTTP_ACCEPT", "")) if node.kind == CONTACT else None
        text = (vcard.as_version(stored, version) if version else stored).encode()
        headers["Content-Length"] = str(len(text))
        headers["Vary"] = "Accept"
        return _response(b"" if head else text, content_type=_content_type(node), headers=headers)
    if node.kind == BOOK:
        text = contacts_export(contacts=node.collection.contacts.order_by("name", "pk")).encode()
        name = f"{node.collection.slug}.vcf" if node.collection.slug.isascii() else "contacts.vcf"
    elif node.kind == CALENDAR:
        text = calendar_export(calendar=node.collection).encode()
        name = f"{node.collection.slug}.ics" if node.collection.slug.isascii() else "calendar.ics"
    else:
        text = b"This is the Mailwell CardDAV/CalDAV server. Point a contacts or calendar app at it.\n"
        return _response(b"" if head else text)
    headers = {"Content-Disposition": f'attachment; filename="{name}"', "Content-Length": str(len(text))}
    return _response(b"" if head else text, content_type=_content_type(node), headers=headers)


def _accepted_vcard_version(accept: str) -> str | None:
    """The vCard version an Accept header asks for (`text/vcard; version=3.0`, or the legacy
    text/x-vcard for 3.0), the most preferred first; None: the stored card as it is."""
    wanted = []
    for position, media_range in enumerate(accept.split(",")):
        kind, *parameters = [part.strip() for part in media_range.split(";")]
        values = dict(part.partition("=")[::2] for part in parameters)
        try:
            quality = float(values.get("q", "1"))
        except ValueError:
            quality = 1.0
        version = values.get("version", "").strip('"')
        if kind.lower() == "text/x-vcard" and not version:
            version = "3.0"
        if kind.lower() in VCARD_TYPES and version in vcard.VERSIONS and quality > 0:
            wanted.append((-quality, position, version))
    return min(wanted)[2] if wanted else None


def _preconditions_fail(request, obj) -> bool:
    """If-Match / If-None-Match against the current resource (None: it does not exist)."""
    if_match = request.META.get("HTTP_IF_MATCH")
    if if_match is not None:
        tags = _etags(if_match)
        if obj is None or not ("*" in tags or obj.etag in tags):
            return True
    if_none_match = request.META.get("HTTP_IF_NONE_MATCH")
    if if_none_match is not None:
        tags = _etags(if_none_match)
        if obj is not None and ("*" in tags or obj.etag in tags):
            return True
    return False


def _put(request, node: Node) -> HttpResponse:
    if node.kind not in (CONTACT, EVENT):
        return _response("Only contacts and events can be written here.\n", status=405, headers={"Allow": ALLOW})
    body = _body(request, MAX_RESOURCE_BYTES)
    if isinstance(body, HttpResponse):
        return body
    content_type = request.META.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
    is_contact = node.kind == CONTACT
    expected = VCARD_TYPES if is_contact else ("text/calendar",)
    if content_type and content_type not in expected:
        return _response(f"Send {expected[0]} here.\n", status=415)
    data_condition = card("valid-address-data") if is_contact else cal("valid-calendar-data")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return _precondition(400, data_condition)
    if _preconditions_fail(request, node.obj):
        return _response("The resource changed since you read it.\n", status=412)
    if_match = node.obj.etag if (node.obj is not None and "HTTP_IF_MATCH" in request.META) else None
    if_none_match = "*" in _etags(request.META.get("HTTP_IF_NONE_MATCH", ""))
    try:
        if is_contact:
            obj, created = contact_put(book=node.collection, href=node.name, text=text, if_match=if_match,
                                       if_none_match=if_none_match)
        else:
            obj, created = event_put(calendar=node.collection, href=node.name, text=text, if_match=if_match,
                                     if_none_match=if_none_match)
    except ComponentUnsupported:
        return _precondition(403, cal("supported-calendar-component"))
    except (ContactInvalid, vcard.VCardError, EventInvalid, ical.ICalError):
        return _precondition(400, data_condition)
    except (ContactConflict, EventConflict):
        now = _named_member(Node(BOOK if is_contact else CALENDAR, "", node.mailbox, collection=node.collection),
                            node.name).obj
        if (now.etag if now else None) != (node.obj.etag if node.obj else None):  # changed meanwhile
            return _response("The resource changed since you read it.\n", status=412)
        return _precondition(409, card("no-uid-conflict") if is_contact else cal("no-uid-conflict"))
    return _response(status=201 if created else 204, headers={"ETag": _quoted_etag(obj.etag)})


def _delete(request, node: Node) -> HttpResponse:
    if node.kind in (BOOK, CALENDAR):
        try:
            if node.kind == BOOK:
                address_book_delete(book=node.collection)
            else:
                calendar_delete(calendar=node.collection)
        except (AddressBookRefused, CalendarRefused) as exc:
            return _response(f"{exc.detail}\n", status=403)
        return _response(status=204)
    if node.kind not in (CONTACT, EVENT):
        return _response("Only address books, calendars and what they hold can be deleted.\n", status=403)
    if node.obj is None:
        return _not_found()
    if _preconditions_fail(request, node.obj):
        return _response("The resource changed since you read it.\n", status=412)
    if node.kind == CONTACT:
        contact_delete(contact=node.obj)
    else:
        event_delete(event=node.obj, notify=False)  # the client sends its own cancellations
    return _response(status=204)


# --- REPORT ----------------------------------------------------------------------------------

Representation = Callable[[Node], str]
"""The text a REPORT answers in calendar-data or address-data for a member (expanded, converted)."""


def _report(request, node: Node) -> HttpResponse:
    root = _xml_body(request)
    if isinstance(root, HttpResponse):
        return root
    if root is None:
        return _response("A REPORT needs a body.\n", status=400)
    if node.kind not in (BOOK, CALENDAR):
        return _precondition(403, d("supported-report"))
    book = node.kind == BOOK
    if not book and root.tag == cal("free-busy-query"):
        return _free_busy_query(node, root)
    handlers = {d("sync-collection"): _sync_collection}
    if book:
        handlers |= {card("addressbook-multiget"): _multiget, card("addressbook-query"): _addressbook_query}
    else:
        handlers |= {cal("calendar-multiget"): _multiget, cal("calendar-query"): _calendar_query}
    handler = handlers.get(root.tag)
    if handler is None:
        return _precondition(403, d("supported-report"))
    representation = _address_data_request(root) if book else _calendar_data_request(root)
    if isinstance(representation, HttpResponse):
        return representation
    return handler(request, node, root, representation)


def _report_props(root: ET.Element) -> tuple[str, list[str]]:
    mode, names = _requested(root)
    return ("prop", names) if mode == "prop" else ("prop", [d("getetag")])


def _calendar_data_request(root: ET.Element) -> Representation | None | HttpResponse:
    """What a REPORT's <C:calendar-data> asks beyond the stored text: expand (RFC 4791 9.6.5) or
    limit-recurrence-set (9.6.6) over a range; None for the stored text."""
    element = root.find(f"{d('prop')}/{cal('calendar-data')}")
    if element is None:
        return None
    if element.get("content-type", "text/calendar").lower() != "text/calendar" \
            or element.get("version", "2.0") != "2.0":
        return _precondition(403, cal("supported-calendar-data"))
    for tag, shape in ((cal("expand"), ical.expand), (cal("limit-recurrence-set"), ical.limit_recurrence_set)):
        limit = element.find(tag)
        if limit is None:
            continue
        start, end = _utc_stamp(limit.get("start"), None), _utc_stamp(limit.get("end"), None)
        if start is None or end is None or end <= start:
            return _response("expand and limit-recurrence-set need a start and a later end, in UTC.\n", status=400)

        def shaped(node: Node, shape=shape, start=start, end=end) -> str:
            try:
                return shape(node.obj.ical, start, end)
            except Exception:  # an object recurring-ical-events cannot expand: answered as stored
                return node.obj.ical
        return shaped
    return None


def _address_data_request(root: ET.Element) -> Representation | None | HttpResponse:
    """The vCard version a REPORT's <CR:address-data content-type version> asks for (RFC 6352 10.4):
    the stored card converted to it; None for the stored text."""
    element = root.find(f"{d('prop')}/{card('address-data')}")
    if element is None:
        return None
    if element.get("content-type", "text/vcard").lower() not in VCARD_TYPES:
        return _precondition(403, card("supported-address-data-conversion"))
    version = element.get("version")
    if version is None:
        return None
    if version not in vcard.VERSIONS:
        return _precondition(403, card("supported-address-data-conversion"))
    return lambda node: vcard.as_version(node.obj.vcard, version)


def _multiget(request, node: Node, root: ET.Element, representation: Representation | None) -> HttpResponse:
    mode, names = _report_props(root)
    multistatus = Multistatus()
    prefix = unquote(node.href)
    for href_element in root.findall(d("href")):
        href = (href_element.text or "").strip()
        path = unquote(urlsplit(href).path)
        name = path[len(prefix):] if path.startswith(prefix) else ""
        member = _named_member(node, name) if _valid_name(name) else None
        if member is None or member.obj is None:
            multistatus.add(href, status="404 Not Found")
        else:
            _add_response(multistatus, request, member, mode, names, representation)
    return _xml(multistatus.to_bytes())


def _text_matches(value: str, match: ET.Element, default_collation: str = "i;unicode-casemap") -> bool:
    wanted = match.text or ""
    collation = match.get("collation", default_collation)
    if collation != "i;octet":
        value, wanted = value.casefold(), wanted.casefold()
    kind = match.get("match-type", "contains")
    result = {"equals": value == wanted, "starts-with": value.startswith(wanted),
              "ends-with": value.endswith(wanted)}.get(kind, wanted in value)
    return not result if match.get("negate-condition") == "yes" else result


def _card_value(prop) -> str:
    value = prop.value
    if isinstance(value, list):
        return ",".join(str(part) for part in value)
    return str(value)


def _card_prop_matches(found: list, prop_filter: ET.Element, namespace) -> bool:
    if prop_filter.find(namespace("is-not-defined")) is not None:
        return not found
    if not found:
        return False
    tests = prop_filter.findall(namespace("text-match"))
    if not tests:
        return True
    results = [any(_text_matches(_card_value(prop), test) for prop in found) for test in tests]
    return all(results) if prop_filter.get("test", "anyof") == "allof" else any(results)


def _addressbook_query(request, node: Node, root: ET.Element, representation: Representation | None) -> HttpResponse:
    mode, names = _report_props(root)
    filter_element = root.find(card("filter"))
    prop_filters = filter_element.findall(card("prop-filter")) if filter_element is not None else []
    all_of = filter_element is not None and filter_element.get("test", "anyof") == "allof"
    limit_element = root.find(f"{card('limit')}/{card('nresults')}")
    limit = int(limit_element.text) if limit_element is not None and (limit_element.text or "").isdigit() else None
    multistatus = Multistatus()
    count = 0
    for member in _children(node):
        if prop_filters:
            try:
                parsed = vcard.parse_one(member.obj.vcard)
            except vcard.VCardError:
                continue
            results = [_card_prop_matches(parsed.contents.get(pf.get("name", "").lower(), []), pf, card)
                       for pf in prop_filters]
            if not (all(results) if all_of else any(results)):
                continue
        if limit is not None and count >= limit:
            multistatus.add(node.href, status="507 Insufficient Storage")
            break
        _add_response(multistatus, request, member, mode, names, representation)
        count += 1
    return _xml(multistatus.to_bytes())


def _utc_stamp(value: str | None, default: datetime | None) -> datetime | None:
    if not value:
        return default
    try:
        return datetime.strptime(value.strip(), "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    except ValueError:
        return default


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
            if not any(_text_matches(value, match, "i;ascii-casemap") for value in found):
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
        found = in_range(objects, _utc_stamp(time_range.get("start"), FAR_PAST),
                         _utc_stamp(time_range.get("end"), FAR_FUTURE))
    else:
        found = list(objects.order_by("start", "pk"))
    prop_filters = comp_filter.findall(cal("prop-filter"))
    if prop_filters:
        found = [event for event in found if _props_match(event, component, prop_filters)]
    return found


def _calendar_query(request, node: Node, root: ET.Element, representation: Representation | None) -> HttpResponse:
    mode, names = _report_props(root)
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
        _add_response(multistatus, request, _member(node, event), mode, names, representation)
    return _xml(multistatus.to_bytes())


def _free_busy_query(node: Node, root: ET.Element) -> HttpResponse:
    """RFC 4791 7.10: the calendar's busy time in a range as one VFREEBUSY (200, text/calendar)."""
    time_range = root.find(cal("time-range"))
    start = _utc_stamp(time_range.get("start"), None) if time_range is not None else None
    end = _utc_stamp(time_range.get("end"), FAR_FUTURE) if time_range is not None else None
    if start is None or end is None or end <= start:
        return _response("A free-busy-query needs a time-range with a start (and an end after it), in UTC.\n",
                         status=400)
    text = calendar_free_busy(calendar=node.collection, start=start, end=end).encode()
    return _response(text, content_type="text/calendar; charset=utf-8", headers={"Content-Length": str(len(text))})


def _sync_collection(request, node: Node, root: ET.Element, representation: Representation | None) -> HttpResponse:
    mode, names = _report_props(root)
    token = (root.findtext(d("sync-token")) or "").strip()
    collection = type(node.collection).objects.get(pk=node.collection.pk)  # the revision as of now
    node.collection = collection
    multistatus = Multistatus()
    if not token:
        for member in _children(node):
            _add_response(multistatus, request, member, mode, names, representation)
    else:
        match = SYNC_TOKEN.search(token)
        kind = "b" if node.kind == BOOK else "c"
        if (match is None or match["kind"] != kind or int(match["pk"]) != collection.pk
                or int(match["revision"]) > collection.revision):
            return _precondition(403, d("valid-sync-token"))
        changed = changes_since(collection, int(match["revision"]))
        model, owner = (Contact, "book") if node.kind == BOOK else (CalendarEvent, "calendar")
        objects = {obj.href: obj for obj in model.objects.filter(
            **{owner: collection, "href__in": [change.href for change in changed if not change.deleted]})}
        for change in changed:
            obj = objects.get(change.href)
            if change.deleted or obj is None:
                multistatus.add(node.href + _segment(change.href), status="404 Not Found")
            else:
                _add_response(multistatus, request, _member(node, obj), mode, names, representation)
    multistatus.sync_token(_sync_token(request, node))
    return _xml(multistatus.to_bytes())
