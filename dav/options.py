"""OPTIONS: answered before sign-in, so a client learns the DAV classes (RFC 4918 10.1) and methods first."""
from django.http import HttpResponse

from dav.responses import ALLOW, response


def options(request) -> HttpResponse:
    return response(headers={"Allow": ALLOW, "Content-Length": "0"})
