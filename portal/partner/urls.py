"""The partner portal's pages (namespace "portal"): the JSON API owns /webhooks, /v1/hosting and
/api-keys, so these live under /portal/."""
from django.urls import path

from portal.partner import account_settings, clients, dashboard, domains, mailboxes, webhooks

app_name = "portal"

urlpatterns = [
    path("", dashboard.dashboard, name="dashboard"),
    path("portal/webhooks/", webhooks.webhooks, name="webhooks"),
    path("portal/webhooks/<int:endpoint_id>/", webhooks.webhook_detail, name="webhook"),
    path("portal/webhooks/<int:endpoint_id>/active/", webhooks.webhook_active, name="webhook-active"),
    path("portal/webhooks/<int:endpoint_id>/test/", webhooks.webhook_test, name="webhook-test"),
    path("portal/webhooks/<int:endpoint_id>/rotate-secret/", webhooks.webhook_rotate, name="webhook-rotate"),
    path("portal/webhooks/<int:endpoint_id>/delete/", webhooks.webhook_delete, name="webhook-delete"),
    path("portal/webhooks/<int:endpoint_id>/deliveries/<int:delivery_id>/retry/",
         webhooks.webhook_delivery_retry, name="webhook-delivery-retry"),
    path("portal/webhooks/<int:endpoint_id>/deliveries/<int:delivery_id>/replay/",
         webhooks.webhook_delivery_replay, name="webhook-delivery-replay"),
    path("portal/partner/apply/", domains.partner_apply, name="partner-apply"),
    path("portal/domains/", domains.domains, name="domains"),
    path("portal/domains/<int:domain_id>/", domains.domain_detail, name="domain"),
    path("portal/domains/<int:domain_id>/check/", domains.domain_check, name="domain-check"),
    path("portal/domains/<int:domain_id>/delete/", domains.domain_remove, name="domain-delete"),
    path("portal/clients/", clients.clients, name="clients"),
    path("portal/clients/<int:client_id>/", clients.client_detail, name="client"),
    path("portal/clients/<int:client_id>/rename/", clients.client_rename, name="client-rename"),
    path("portal/clients/<int:client_id>/lapse-action/", clients.client_lapse, name="client-lapse-action"),
    path("portal/clients/<int:client_id>/delete/", clients.client_remove, name="client-delete"),
    path("portal/mailboxes/", mailboxes.mailboxes, name="mailboxes"),
    path("portal/mailboxes/new/", mailboxes.mailbox_new, name="mailbox-new"),
    path("portal/mailboxes/<int:mailbox_id>/", mailboxes.mailbox_detail, name="mailbox"),
    path("portal/mailboxes/<int:mailbox_id>/renew/", mailboxes.mailbox_renew, name="mailbox-renew"),
    path("portal/mailboxes/<int:mailbox_id>/delete/", mailboxes.mailbox_delete, name="mailbox-delete"),
    path("portal/mailboxes/<int:mailbox_id>/identity/", mailboxes.mailbox_identity, name="mailbox-identity"),
    path("portal/mailboxes/<int:mailbox_id>/forwarding/", mailboxes.mailbox_forwarding, name="mailbox-forwarding"),
    path("portal/mailboxes/<int:mailbox_id>/forwarding/<int:rule_id>/enabled/",
         mailboxes.mailbox_forwarding_enabled, name="mailbox-forwarding-enabled"),
    path("portal/mailboxes/<int:mailbox_id>/forwarding/<int:rule_id>/delete/",
         mailboxes.mailbox_forwarding_delete, name="mailbox-forwarding-delete"),
    path("portal/mailboxes/<int:mailbox_id>/aliases/", mailboxes.mailbox_aliases_add, name="mailbox-aliases"),
    path("portal/mailboxes/<int:mailbox_id>/aliases/<int:alias_id>/delete/", mailboxes.mailbox_alias_delete,
         name="mailbox-alias-delete"),
    path("portal/settings/", account_settings.settings_page, name="settings"),
    path("portal/settings/lapse-action/", account_settings.lapse_action, name="settings-lapse-action"),
    path("portal/settings/api-keys/new/", account_settings.api_key_new, name="api-key-new"),
    path("portal/settings/api-keys/<int:key_id>/", account_settings.api_key_detail, name="api-key"),
    path("portal/settings/api-keys/<int:key_id>/revoke/", account_settings.api_key_revoke_view,
         name="api-key-revoke"),
]
