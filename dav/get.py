"""GET and HEAD (RFC 4918 9.4): a contact (in the vCard version asked for) or an event, or a whole book or calendar."""
from django.http import HttpResponse
from django.utils.http import http_date

from dav.conditions import header_etags, quoted_etag
from dav.media import VCARD_TYPES, content_type_of
from dav.responses import not_found, response
from dav.tree import BOOK, CALENDAR, CONTACT, EVENT, Node
from calendars.services import calendar_export
from contacts import vcard
from contacts.services import contacts_export


def get(request, node: Node) -> HttpResponse:
    head = request.method == "HEAD"
    if node.kind in (CONTACT, EVENT):
        if node.obj is None:
            return not_found()
        obj = node.obj
        etag = quoted_etag(obj.etag)
        headers = {"ETag": etag, "Last-Modified": http_date(obj.updated_at.timestamp())}
        if obj.etag in header_etags(request.META.get("HTTP_IF_NONE_MATCH", "")):
            return response(status=304, headers=headers)
        stored = obj.vcard if node.kind == CONTACT else obj.ical
        version = _accepted_vcard_version(request.META.get("HTTP_ACCEPT", "")) if node.kind == CONTACT else None
        text = (vcard.as_version(stored, version) if version else stored).encode()
        headers["Content-Length"] = str(len(text))
        headers["Vary"] = "Accept"
        return response(b"" if head else text, content_type=content_type_of(node), headers=headers)
    if node.kind == BOOK:
        text = contacts_export(contacts=node.collection.contacts.order_by("name", "pk")).encode()
        name = f"{node.collection.slug}.vcf" if node.collection.slug.isascii() else "contacts.vcf"
    elif node.kind == CALENDAR:
        text = calendar_export(calendar=node.collection).encode()
        name = f"{node.collection.slug}.ics" if node.collection.slug.isascii() else "calendar.ics"
    else:
        text = b"This is the Mailwell CardDAV/CalDAV server. Point a contacts or calendar app at it.\n"
        return response(b"" if head else text)
    headers = {"Content-Disposition": f'attachment; filename="{name}"', "Content-Length": str(len(text))}
    return response(b"" if head else text, content_type=content_type_of(node), headers=headers)


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
