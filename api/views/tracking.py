"""Open pixels and click redirects: public URLs carrying a signed token."""
import base64

from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from api.authentication import request_client_ip
from mailcore.sending.tracking import InvalidToken, tracking_click, tracking_open

PIXEL = base64.b64decode("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7")


@never_cache
@require_GET
def tracking_pixel(request, token: str):
    try:
        tracking_open(token=token, client_ip=request_client_ip(request),
                      user_agent=request.headers.get("User-Agent", ""))
    except InvalidToken:
        raise Http404("unknown tracking link") from None
    return HttpResponse(PIXEL, content_type="image/gif")


@never_cache
@require_GET
def tracking_redirect(request, token: str):
    try:
        url = tracking_click(token=token)
    except InvalidToken:
        raise Http404("unknown tracking link") from None
    if not url.startswith(("http://", "https://")):  # only what compose signed: never another scheme
        raise Http404("unknown tracking link")
    return HttpResponseRedirect(url)
