"""The root URLconf: the JSON API at the top level (as the spec's paths), the partner portal's pages,
the local payment provider's hosted checkout, /webmail/ reserved for mailbox owners, CardDAV/CalDAV
at /dav/ and mail-client autoconfiguration. The one place that names portal's, api's and dav's
URL modules (api, portal and dav never import each other)."""
from django.urls import include, path

from portal import favicon, signin
from portal.console.admin import site as operator_site
from portal.ops import health, metrics

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics.metrics, name="metrics"),
    path("favicon.ico", favicon.favicon, name="favicon"),
    path("", include("dav.urls")),
    path("", include("portal.autoconfig.urls")),
    path("", include("portal.unsubscribe_urls")),
    path("", include("portal.partner.urls")),
    path("webmail/", include("portal.webmail.urls")),
    path("accounts/login/", signin.login, name="account_login"),
    path("accounts/", include("allauth.urls")),
    path("admin/", operator_site.urls),
    path("", include("portal.checkout.urls")),
    path("", include("api.urls")),
]

handler400 = "api.errors.bad_request"
handler403 = "api.errors.permission_denied"
handler404 = "api.errors.page_not_found"
handler500 = "api.errors.server_error"
