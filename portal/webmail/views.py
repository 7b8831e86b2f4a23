"""The webmail's sign-in and sign-out for mailbox owners (the mail list is portal.webmail.mail_list,
reading a message portal.webmail.reading)."""
from django import forms
from django.conf import settings
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST

from mailcore.ipnets import client_ip
from mailcore.throttle import LoginThrottled
from webmail.sessions import WebmailLoginRefused, webmail_login, webmail_logout
from portal.webmail.access import cookie_clear, cookie_set, webmail_session
from portal.webmail_host import request_partner_id


class LoginForm(forms.Form):
    address = forms.EmailField(label="Email address", widget=forms.EmailInput(attrs={"autocomplete": "username"}))
    password = forms.CharField(label="Password", strip=False,
                               widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}))
    remember = forms.BooleanField(label="Keep me signed in for 30 days", required=False)


def _next_url(request) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(target, {request.get_host()}, require_https=request.is_secure()):
        return target
    return "/webmail/inbox/"


@require_http_methods(["GET", "POST"])
def login(request):
    if webmail_session(request) is not None and request.method == "GET":
        return redirect(_next_url(request))
    form = LoginForm(request.POST or None)
    refused, status, retry_after = None, 200, None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            session, raw = webmail_login(address=data["address"], password=data["password"],
                                         client_ip=client_ip(request.META, settings.TRUSTED_PROXY_COUNT),
                                         remember=data["remember"], partner_id=request_partner_id(request))
        except LoginThrottled as exc:
            refused, status, retry_after = exc.detail, 429, exc.retry_after
        except WebmailLoginRefused as exc:
            refused, status = exc.detail, 403 if "password" not in exc.detail else 401
        else:
            response = redirect(_next_url(request))
            cookie_set(response, raw, remember=session.remember)
            return response
    response = render(request, "webmail/login.html", {"form": form, "refused": refused,
                                                      "next": request.GET.get("next", "")}, status=status)
    if retry_after:
        response["Retry-After"] = str(retry_after)
    return response


@require_POST
def logout(request):
    session = webmail_session(request)
    if session is not None:
        webmail_logout(session=session)
    response = redirect("webmail:login")
    cookie_clear(response)
    return response
