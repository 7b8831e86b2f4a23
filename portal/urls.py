"""The root URLconf: the JSON API at the top level (as the spec's paths), the partner portal's pages,
and /webmail/ reserved for mailbox owners. The one place portal names the API (by module path)."""
from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("", include("portal.partner.urls")),
    path("webmail/", include("portal.webmail.urls")),
    path("accounts/", include("allauth.urls")),
    path("admin/", admin.site.urls),
    path("", include("api.urls")),
]

handler400 = "api.errors.bad_request"
handler403 = "api.errors.permission_denied"
handler404 = "api.errors.page_not_found"
handler500 = "api.errors.server_error"
