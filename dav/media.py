"""The media types of contacts and events: what GET and PROPFIND say a resource is, what PUT and REPORT accept."""
from dav.tree import BOOK, CONTACT, EVENT, Node

VCARD_TYPES = ("text/vcard", "text/x-vcard", "text/directory")


def content_type_of(node: Node) -> str:
    if node.kind in (CONTACT, BOOK):
        return "text/vcard; charset=utf-8"
    if node.kind == EVENT and node.obj is not None:
        return f"text/calendar; charset=utf-8; component={node.obj.component}"
    return "text/calendar; charset=utf-8"
