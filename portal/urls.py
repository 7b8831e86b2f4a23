"""The root URLconf: the JSON API at the top level (as the spec's paths), the portal's pages."""
from django.contrib import admin
from django.urls import include, path

from portal import views, views_webhooks

portal_patterns = [
    path("", views.dashboard, name="dashboard"),
    # The JSON API owns /webhooks; the portal's pages live under /portal/webhooks/.
    path("portal/webhooks/", views_webhooks.webhooks, name="webhooks"),
    path("portal/webhooks/<int:endpoint_id>/", views_webhooks.webhook_detail, name="webhook"),
    path("portal/webhooks/<int:endpoint_id>/active/", views_webhooks.webhook_active, name="webhook-active"),
    path("portal/webhooks/<int:endpoint_id>/test/", views_webhooks.webhook_test, name="webhook-test"),
    path("portal/webhooks/<int:endpoint_id>/rotate-secret/", views_webhooks.webhook_rotate, name="webhook-rotate"),
    path("portal/webhooks/<int:endpoint_id>/delete/", views_webhooks.webhook_delete, name="webhook-delete"),
    path("portal/webhooks/<int:endpoint_id>/deliveries/<int:delivery_id>/retry/",
         views_webhooks.webhook_delivery_retry, name="webhook-delivery-retry"),
    path("portal/webhooks/<int:endpoint_id>/deliveries/<int:delivery_id>/replay/",
         views_webhooks.webhook_delivery_replay, name="webhook-delivery-replay"),
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
