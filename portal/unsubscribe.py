"""The public unsubscribe page of campaign mail (no login): GET shows what the link would do and a
button (a form with CSRF), and never unsubscribes by itself, since link scanners and image proxies
fetch links; POST unsubscribes. A mail provider's one-click POST (RFC 8058: the body
`List-Unsubscribe=One-Click`, no cookies, no CSRF token) unsubscribes and answers 200. An altered or
made-up link answers 404 and changes nothing."""
from django.http import HttpResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from campaigns.unsubscribe import InvalidUnsubscribeLink, unsubscribe, unsubscribe_target, unsubscribed

ONE_CLICK = "One-Click"


def _invalid(request):
    return render(request, "unsubscribe/invalid.html", status=404)


def _csrf_refusal(request) -> HttpResponse | None:
    """Django's own CSRF check, for the form's POST (the view is exempt for the one-click POST only)."""
    return CsrfViewMiddleware(lambda r: None).process_view(request, None, (), {})


@never_cache
@csrf_exempt
@require_http_methods(["GET", "POST"])
def unsubscribe_page(request, token: str):
    try:
        target = unsubscribe_target(token=token)
    except InvalidUnsubscribeLink:
        return _invalid(request)
    if request.method == "GET":
        return render(request, "unsubscribe/confirm.html", {"target": target, "done": unsubscribed(target)})
    one_click = request.POST.get("List-Unsubscribe") == ONE_CLICK
    if not one_click and (refusal := _csrf_refusal(request)):
        return refusal
    unsubscribe(token=token)
    if one_click:
        return HttpResponse("Unsubscribed.\n", content_type="text/plain; charset=utf-8")
    return render(request, "unsubscribe/confirm.html", {"target": target, "done": True})
