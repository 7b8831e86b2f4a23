"""calendar-multiget (RFC 4791 7.9) and addressbook-multiget (RFC 6352 8.7), one answer: the members named by href."""
from urllib.parse import unquote, urlsplit
from xml.etree import ElementTree as ET

from django.http import HttpResponse

from dav.davxml import Multistatus, d
from dav.properties import Representation, add_response, report_requested
from dav.responses import xml_response
from dav.tree import Node, member_named, valid_name


def multiget(request, node: Node, root: ET.Element, representation: Representation | None) -> HttpResponse:
    mode, names = report_requested(root)
    multistatus = Multistatus()
    prefix = unquote(node.href)
    for href_element in root.findall(d("href")):
        href = (href_element.text or "").strip()
        path = unquote(urlsplit(href).path)
        name = path[len(prefix):] if path.startswith(prefix) else ""
        member = member_named(node, name) if valid_name(name) else None
        if member is None or member.obj is None:
            multistatus.add(href, status="404 Not Found")
        else:
            add_response(multistatus, request, member, mode, names, representation)
    return xml_response(multistatus.to_bytes())
