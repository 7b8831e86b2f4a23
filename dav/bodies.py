"""Request bodies read within their size limits (XML ones parsed safely) for every method that takes one."""
from xml.etree import ElementTree as ET

from django.http import HttpResponse

from dav import davxml
from dav.davxml import XmlRefused
from dav.responses import response

MAX_RESOURCE_BYTES = 1_000_000  # a vCard with a photo, an event with its overrides
MAX_XML_BYTES = 256 * 1024  # a PROPFIND or REPORT body


def read_body(request, limit: int) -> bytes | HttpResponse:
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return response("Bad Content-Length.\n", status=400)
    if length > limit:
        return response(f"The request body may be at most {limit} bytes.\n", status=413)
    body = request.body
    if len(body) > limit:
        return response(f"The request body may be at most {limit} bytes.\n", status=413)
    return body


def xml_body(request) -> ET.Element | None | HttpResponse:
    body = read_body(request, MAX_XML_BYTES)
    if isinstance(body, HttpResponse):
        return body
    try:
        return davxml.parse(body)
    except XmlRefused:
        return response("The request body is not acceptable XML (DTDs and entities are refused).\n", status=400)
