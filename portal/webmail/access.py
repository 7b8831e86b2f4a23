"""Who is signed in to the webmail: the mailbox named by the `mw_webmail` cookie (its own realm,
never the portal's session), and the decorator that sends everyone else to the sign-in page."""
from functools import wraps

from django.conf import settings
from django.shortcuts import redirect
from django.urls import reverse

from webmail.sessions import REMEMBER, WebmailSession, webmail_session_for
from portal.webmail_host import request_partner_id

COOKIE = "mw_webmail"


def webmail_session(request) -> WebmailSession | None:
    if not hasattr(request, "_webmail_session"):
        request._webmail_session = webmail_session_for(request.COOKIES.get(COOKIE),
                                                       partner_id=request_partner_id(request))
    return request._webmail_session


def cookie_set(response, raw: str, *, remember: bool) -> None:
    response.set_cookie(COOKIE, raw, max_age=int(REMEMBER.total_seconds()) if remember else None, httponly=True,
                        secure=settings.SESSION_COOKIE_SECURE, samesite="Lax", path="/")


def cookie_clear(response) -> None:
    response.delete_cookie(COOKIE, path="/", samesite="Lax")


def owner_required(view):
    """Pass the signed-in mailbox as the view's second argument, or go to the sign-in page."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        session = webmail_session(request)
        if session is None:
            return redirect(f"{reverse('webmail:login')}?next={request.path}")
        return view(request, session.mailbox, *args, **kwargs)

    return wrapped
