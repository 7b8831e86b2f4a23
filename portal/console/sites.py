"""The console's admin site: staff who passed allauth's sign-in and its TOTP step (see the package)."""
from allauth.account.decorators import secure_admin_login
from allauth.account.utils import get_next_redirect_url
from django.contrib import admin
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import path, reverse

from portal.console.mfa import mfa_detour, passed_mfa
from portal.console.system_mail import system_mail_domain_view
from protection.scanner_status import scanner_state


class OperatorSite(admin.AdminSite):
    site_header = "Mailwell operator console"
    site_title = "Mailwell operators"
    index_title = "Operator console"
    index_template = "admin/operator/index.html"

    def has_permission(self, request: HttpRequest) -> bool:
        return super().has_permission(request) and passed_mfa(request)

    def index(self, request: HttpRequest, extra_context=None) -> HttpResponse:
        """The console's first page says which scanners are on (asked fresh)."""
        return super().index(request, {**(extra_context or {}), "scanners": scanner_state(fresh=True)})

    def get_urls(self):
        """Django's pages plus the system mail domain's records."""
        page = self.admin_view(lambda request: system_mail_domain_view(self, request))
        return [path("system-mail-domain/", page, name="system_mail_domain"), *super().get_urls()]

    def login(self, request: HttpRequest, extra_context=None) -> HttpResponse:
        """Every view without permission lands here: allauth's login for visitors, 403 for non-staff."""
        return secure_admin_login(self._signed_in_staff)(request)

    def _signed_in_staff(self, request: HttpRequest) -> HttpResponse:
        next_url = get_next_redirect_url(request) or reverse("admin:index", current_app=self.name)
        return mfa_detour(request, next_url) or HttpResponseRedirect(next_url)


site = OperatorSite(name="admin")
