"""The URLconf of a partner's verified webmail hostname (set per request by
portal.webmail_host.WebmailHostMiddleware): the webmail at /, the brand's stylesheet and logo, and
/webmail/... sent to the same page at /..., CardDAV/CalDAV and mail-client autoconfiguration (so
phones can be set up with the hostname the owner knows). Nothing else of the platform (portal, API, admin) exists
on a partner's hostname. Static files are served by WhiteNoise before any URLconf is read."""
from django.urls import include, path, re_path

from portal import favicon
from portal.webmail import brand_views

urlpatterns = [
    path("brand/<str:version>/style.css", brand_views.stylesheet, name="webmail-brand-stylesheet"),
    path("brand/<str:version>/logo", brand_views.logo, name="webmail-brand-logo"),
    path("favicon.ico", favicon.favicon),
    re_path(r"^webmail/(?P<rest>.*)$", brand_views.platform_path),
    path("", include("dav.urls")),
    path("", include("portal.autoconfig.urls")),
    path("", include("portal.webmail.urls")),
]
