"""The DAV entry points: sign in, gate by plan, walk the tree (dav.tree), and hand the request to
the module of its method."""
from django.http import HttpResponse, HttpResponsePermanentRedirect
from django.views.decorators.csrf import csrf_exempt

from dav.auth import gate, sign_in
from dav.delete import delete
from dav.get import get
from dav.mkcol import mkcol
from dav.move import move
from dav.options import options
from dav.propfind import propfind
from dav.proppatch import proppatch
from dav.put import put
from dav.report import report
from dav.responses import ALLOW, not_found, response
from dav.tree import BOOK, CALENDAR, ROOT, resolve

METHODS = {"PROPFIND": propfind, "PROPPATCH": proppatch, "GET": get, "HEAD": get, "PUT": put,
           "DELETE": delete, "REPORT": report, "MKCOL": mkcol, "MKCALENDAR": mkcol, "MOVE": move}
MAKERS = ("MKCOL", "MKCALENDAR")


@csrf_exempt
def well_known(request, service: str = "") -> HttpResponse:
    """RFC 6764: /.well-known/carddav and /.well-known/caldav lead to the DAV root, whatever the method."""
    return HttpResponsePermanentRedirect(ROOT)


@csrf_exempt
def dav(request, path: str = "") -> HttpResponse:
    if request.method == "OPTIONS":
        return options(request)
    mailbox = sign_in(request)
    if isinstance(mailbox, HttpResponse):
        return mailbox
    top = (path or "").strip("/").split("/", 1)[0]
    refused = gate(mailbox, top)  # before the tree is walked: walking it makes the default book and calendar
    if refused is not None:
        return refused
    node = resolve(path or "", mailbox)
    if node is None:
        return not_found()
    if node.kind in (BOOK, CALENDAR) and node.collection is None and request.method not in MAKERS:
        return not_found()
    handler = METHODS.get(request.method)
    if handler is None:
        return response(f"{request.method} is not supported here.\n", status=405, headers={"Allow": ALLOW})
    return handler(request, node)
