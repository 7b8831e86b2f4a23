"""The root URLconf: the JSON API at the top level (as the spec's paths), the portal's pages."""
from django.contrib import admin
from django.urls import include, path

from portal import views

portal_patterns = [
    path("", views.dashboard, name="dashboard"),
]

urlpatterns = [
    path("", include((portal_patterns, "portal"))),
    path("accounts/", include("allauth.urls")),
    path("admin/", admin.site.urls),
    path("", include("api.urls")),
]

handler400 = "api.errors.bad_request"
handler403 = "api.errors.permission_denied"
handler404 = "api.errors.page_not_found"
handler500 = "api.errors.server_error"
