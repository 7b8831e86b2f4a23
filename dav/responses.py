"""Every DAV answer carries the server's DAV classes, so the plain, XML, error and 404 answers are built here."""
from django.http import HttpResponse

from dav import davxml

DAV_CLASSES = "1, 3, addressbook, calendar-access, extended-mkcol"
ALLOW = "OPTIONS, GET, HEAD, PUT, DELETE, PROPFIND, PROPPATCH, REPORT, MKCOL, MKCALENDAR, MOVE"


def response(body: bytes | str = b"", *, status: int = 200, content_type: str = "text/plain; charset=utf-8",
             headers: dict[str, str] | None = None) -> HttpResponse:
    answer = HttpResponse(body, status=status, content_type=content_type)
    answer["DAV"] = DAV_CLASSES
    for name, value in (headers or {}).items():
        answer[name] = value
    return answer


def xml_response(body: bytes, *, status: int = 207) -> HttpResponse:
    return response(body, status=status, content_type="application/xml; charset=utf-8")


def precondition(status: int, *conditions: str) -> HttpResponse:
    return xml_response(davxml.error(*conditions), status=status)


def not_found() -> HttpResponse:
    return response("Not found.\n", status=404)
