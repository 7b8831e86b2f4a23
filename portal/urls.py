"""The root URLconf: the JSON API at the top level (as the spec's paths), the portal's pages."""
from django.contrib import admin
from django.urls import include, path

from portal import views, views_mailboxes, views_partner, views_settings, views_webhooks

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
    # Hosting partners: domains with their DNS wizard, clients; the JSON API owns /v1/hosting.
    path("portal/partner/apply/", views_partner.partner_apply, name="partner-apply"),
    path("portal/domains/", views_partner.domains, name="domains"),
    path("portal/domains/<int:domain_id>/", views_partner.domain_detail, name="domain"),
    path("portal/domains/<int:domain_id>/check/", views_partner.domain_check, name="domain-check"),
    path("portal/domains/<int:domain_id>/delete/", views_partner.domain_remove, name="domain-delete"),
    path("portal/clients/", views_partner.clients, name="clients"),
    path("portal/clients/<int:client_id>/", views_partner.client_detail, name="client"),
    path("portal/clients/<int:client_id>/rename/", views_partner.client_rename, name="client-rename"),
    path("portal/clients/<int:client_id>/lapse-action/", views_partner.client_lapse, name="client-lapse-action"),
    path("portal/clients/<int:client_id>/delete/", views_partner.client_remove, name="client-delete"),
    # A hosting partner's client mailboxes (the JSON API owns /v1/hosting/mailboxes).
    path("portal/mailboxes/", views_mailboxes.mailboxes, name="mailboxes"),
    path("portal/mailboxes/new/", views_mailboxes.mailbox_new, name="mailbox-new"),
    path("portal/mailboxes/<int:mailbox_id>/", views_mailboxes.mailbox_detail, name="mailbox"),
    path("portal/mailboxes/<int:mailbox_id>/renew/", views_mailboxes.mailbox_renew, name="mailbox-renew"),
    path("portal/mailboxes/<int:mailbox_id>/delete/", views_mailboxes.mailbox_delete, name="mailbox-delete"),
    path("portal/mailboxes/<int:mailbox_id>/identity/", views_mailboxes.mailbox_identity, name="mailbox-identity"),
    path("portal/mailboxes/<int:mailbox_id>/forwarding/", views_mailboxes.mailbox_forwarding,
         name="mailbox-forwarding"),
    path("portal/mailboxes/<int:mailbox_id>/forwarding/<int:rule_id>/enabled/",
         views_mailboxes.mailbox_forwarding_enabled, name="mailbox-forwarding-enabled"),
    path("portal/mailboxes/<int:mailbox_id>/forwarding/<int:rule_id>/delete/",
         views_mailboxes.mailbox_forwarding_delete, name="mailbox-forwarding-delete"),
    path("portal/mailboxes/<int:mailbox_id>/aliases/", views_mailboxes.mailbox_aliases_add, name="mailbox-aliases"),
    path("portal/mailboxes/<int:mailbox_id>/aliases/<int:alias_id>/delete/", views_mailboxes.mailbox_alias_delete,
         name="mailbox-alias-delete"),
    # Settings: the partner's default lapse action; API keys (the JSON API owns /api-keys).
    path("portal/settings/", views_settings.settings_page, name="settings"),
    path("portal/settings/lapse-action/", views_settings.lapse_action, name="settings-lapse-action"),
    path("portal/settings/api-keys/new/", views_settings.api_key_new, name="api-key-new"),
    path("portal/settings/api-keys/<int:key_id>/", views_settings.api_key_detail, name="api-key"),
    path("portal/settings/api-keys/<int:key_id>/revoke/", views_settings.api_key_revoke_view, name="api-key-revoke"),
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
