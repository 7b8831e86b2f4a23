"""The DAV entry points: sign in, gate by plan, walk the tree (dav.protocol), and hand the request to
the module of its method."""
from django.http import HttpResponse, HttpResponsePermanentRedirect
from django.views.decorators.csrf import csrf_exempt

from dav.mkcol import mkcol
from dav.move import move
from dav.proppatch import proppatch
from dav.protocol import (
    ALLOW, BOOK, CALENDAR, ROOT, _delete, _gate, _get, _not_found, _options, _propfind, _put, _report, _resolve,
    _response, _sign_in,
)

METHODS = {"PROPFIND": _propfind, "PROPPATCH": proppatch, "GET": _get, "HEAD": _get, "PUT": _put,
           "DELETE": _delete, "REPORT": _report, "MKCOL": mkcol, "MKCALENDAR": mkcol, "MOVE": move}
MAKERS = ("MKCOL", "MKCALENDAR")


@csrf_exempt
def well_known(request, service: str = "") -> HttpResponse:
    """RFC 6764: /.well-known/carddav and /.well-known/caldav lead to the DAV root, whatever the method."""
    return HttpResponsePermanentRedirect(ROOT)


@csrf_exempt
def dav(request, path: str = "") -> HttpResponse:
    if request.method == "OPTIONS":
        return _options(request)
    mailbox = _sign_in(request)
    if isinstance(mailbox, HttpResponse):
        return mailbox
    top = (path or "").strip("/").split("/", 1)[0]
    refused = _gate(mailbox, top)  # before the tree is walked: walking it makes the default book and calendar
    if refused is not None:
        return refused
    node = _resolve(path or "", mailbox)
    if node is None:
        return _not_found()
    if node.kind in (BOOK, CALENDAR) and node.collection is None and request.method not in MAKERS:
        return _not_found()
    handler = METHODS.get(request.method)
    if handler is None:
        return _response(f"{request.method} is not supported here.\n", status=405, headers={"Allow": ALLOW})
    return handler(request, node)
