"""The tree drawn in dav/__init__.py: the resource a path names for the signed-in mailbox, a collection's members."""
from dataclasses import dataclass
from urllib.parse import quote

from calendars.models import Calendar, CalendarEvent
from calendars.selectors import calendar_by_slug, calendar_list
from calendars.services import calendar_for
from contacts.models import AddressBook, Contact
from contacts.selectors import address_book_by_slug, address_book_list
from contacts.services import address_book_for
from mailcore.mailboxes.models import Mailbox

ROOT = "/dav/"

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


def segment(value: str) -> str:
    return quote(value, safe="@:+-._~!$&'()*,;=")


def principal_href(mailbox: Mailbox) -> str:
    return f"{ROOT}principals/{segment(mailbox.address)}/"


def book_home_href(mailbox: Mailbox) -> str:
    return f"{ROOT}addressbooks/{segment(mailbox.address)}/"


def calendar_home_href(mailbox: Mailbox) -> str:
    return f"{ROOT}calendars/{segment(mailbox.address)}/"


def _book_node(mailbox: Mailbox, book: AddressBook) -> Node:
    return Node(BOOK, book_home_href(mailbox) + segment(book.slug) + "/", mailbox, collection=book, name=book.slug)


def _calendar_node(mailbox: Mailbox, calendar: Calendar) -> Node:
    return Node(CALENDAR, calendar_home_href(mailbox) + segment(calendar.slug) + "/", mailbox, collection=calendar,
                name=calendar.slug)


def _collection_node(mailbox: Mailbox, kind: str, slug: str) -> Node:
    """The book or calendar at this URL segment (the default one made on first use); its collection
    is None when there is none there yet."""
    account = mailbox.account
    if kind == BOOK:
        home, first_use, by_slug = book_home_href(mailbox), address_book_for, address_book_by_slug
    else:
        home, first_use, by_slug = calendar_home_href(mailbox), calendar_for, calendar_by_slug
    default = first_use(account=account, mailbox=mailbox)
    collection = default if slug == default.slug else by_slug(account=account, mailbox=mailbox, slug=slug)
    return Node(kind, home + segment(slug) + "/", mailbox, collection=collection, name=slug)


def member_of(collection: Node, obj: Contact | CalendarEvent) -> Node:
    kind = CONTACT if collection.kind == BOOK else EVENT
    return Node(kind, collection.href + segment(obj.href), collection.mailbox, collection=collection.collection,
                name=obj.href, obj=obj)


def member_named(collection: Node, name: str) -> Node:
    """The member of that resource name (obj None when there is none yet: PUT makes it)."""
    model = Contact if collection.kind == BOOK else CalendarEvent
    owner = "book" if collection.kind == BOOK else "calendar"
    obj = model.objects.filter(**{owner: collection.collection, "href": name}).first()
    if obj is not None:
        return member_of(collection, obj)
    kind = CONTACT if collection.kind == BOOK else EVENT
    return Node(kind, collection.href + segment(name), collection.mailbox, collection=collection.collection, name=name)


def valid_name(name: str) -> bool:
    return 0 < len(name) <= 255 and "/" not in name and name not in (".", "..") and name.isprintable()


def resolve(path: str, mailbox: Mailbox) -> Node | None:
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
        return Node(PRINCIPAL, principal_href(mailbox), mailbox) if len(rest) == 1 else None
    home_kind, home_href, kind = ((BOOK_HOME, book_home_href(mailbox), BOOK) if top == BOOKS
                                  else (CAL_HOME, calendar_home_href(mailbox), CALENDAR))
    if len(rest) == 1:
        return Node(home_kind, home_href, mailbox)
    if len(rest) > 3 or not valid_name(rest[1]):
        return None
    collection = _collection_node(mailbox, kind, rest[1])
    if len(rest) == 2:
        return collection
    if collection.collection is None:
        return None
    return member_named(collection, rest[2]) if valid_name(rest[2]) else None


def plan_features(mailbox: Mailbox) -> tuple[bool, bool]:
    plan = mailbox.effective_plan
    return plan.has_feature("contacts"), plan.has_feature("calendar")


def children_of(node: Node) -> list[Node]:
    mailbox = node.mailbox
    contacts, calendar = plan_features(mailbox)
    if node.kind in (ROOT_KIND, PRINCIPALS):
        return [Node(PRINCIPAL, principal_href(mailbox), mailbox)]
    if node.kind == BOOKS:
        return [Node(BOOK_HOME, book_home_href(mailbox), mailbox)]
    if node.kind == CALENDARS:
        return [Node(CAL_HOME, calendar_home_href(mailbox), mailbox)]
    if node.kind == BOOK_HOME:
        address_book_for(account=mailbox.account, mailbox=mailbox)
        return [_book_node(mailbox, book) for book in address_book_list(account=mailbox.account, mailbox=mailbox)]
    if node.kind == CAL_HOME:
        calendar_for(account=mailbox.account, mailbox=mailbox)
        return [_calendar_node(mailbox, calendar)
                for calendar in calendar_list(account=mailbox.account, mailbox=mailbox)]
    if node.kind == BOOK:
        return [member_of(node, contact) for contact in node.collection.contacts.order_by("href")]
    if node.kind == CALENDAR:
        return [member_of(node, event) for event in node.collection.events.order_by("href")]
    return []
