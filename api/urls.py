from django.urls import include, path
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerView

from api.mcp.views import McpApi
from api.views import api_keys, auth, billing_webhooks, inbox, labels, mailboxes, sending, subscriptions, tracking, webhooks

urlpatterns = [
    path("auth/login", auth.AuthLoginApi.as_view(), name="auth-login"),
    path("auth/logout", auth.AuthLogoutApi.as_view(), name="auth-logout"),
    path("api-keys", api_keys.ApiKeyListCreateApi.as_view(), name="api-keys"),
    path("api-keys/<int:key_id>", api_keys.ApiKeyDetailApi.as_view(), name="api-key"),
    path("api-keys/<int:key_id>/usage", api_keys.ApiKeyUsageApi.as_view(), name="api-key-usage"),
    path("subscriptions/me", subscriptions.SubscriptionMeApi.as_view(), name="subscription-me"),
    path("inbox", inbox.InboxListApi.as_view(), name="inbox"),
    path("inbox/folders", inbox.InboxFoldersApi.as_view(), name="inbox-folders"),
    path("inbox/<int:uid>", inbox.InboxMessageApi.as_view(), name="inbox-message"),
    path("inbox/<int:uid>/attachments/<int:index>", inbox.InboxAttachmentApi.as_view(), name="inbox-attachment"),
    path("labels", labels.LabelListCreateApi.as_view(), name="labels"),
    path("labels/<int:label_id>", labels.LabelDetailApi.as_view(), name="label"),
    path("mailboxes", mailboxes.MailboxListApi.as_view(), name="mailboxes"),
    path("mailboxes/connected", mailboxes.MailboxConnectApi.as_view(), name="mailbox-connect"),
    path("mail/mailbox-usage", mailboxes.MailboxUsageApi.as_view(), name="mailbox-usage"),
    path("mail/send", sending.MailSendApi.as_view(), name="mail-send"),
    path("mail/scheduled", sending.ScheduledListApi.as_view(), name="mail-scheduled"),
    path("mail/scheduled/<int:scheduled_id>", sending.ScheduledDetailApi.as_view(), name="mail-scheduled-detail"),
    path("mail/templates", sending.TemplateListCreateApi.as_view(), name="mail-templates"),
    path("mail/templates/<int:template_id>", sending.TemplateDetailApi.as_view(), name="mail-template"),
    path("t/o/<str:token>.gif", tracking.tracking_pixel, name="tracking-open"),
    path("t/c/<str:token>", tracking.tracking_redirect, name="tracking-click"),
    path("webhooks", webhooks.WebhookListCreateApi.as_view(), name="webhooks"),
    path("webhooks/<int:webhook_id>", webhooks.WebhookDetailApi.as_view(), name="webhook"),
    path("webhooks/<int:webhook_id>/rotate-secret", webhooks.WebhookRotateSecretApi.as_view(), name="webhook-rotate"),
    path("webhooks/<int:webhook_id>/test", webhooks.WebhookTestApi.as_view(), name="webhook-test"),
    path("webhooks/<int:webhook_id>/deliveries", webhooks.WebhookDeliveriesApi.as_view(), name="webhook-deliveries"),
    path("webhooks/<int:webhook_id>/deliveries/<int:delivery_id>/retry", webhooks.WebhookDeliveryRetryApi.as_view(),
         name="webhook-delivery-retry"),
    path("webhooks/<int:webhook_id>/deliveries/<int:delivery_id>/replay", webhooks.WebhookDeliveryReplayApi.as_view(),
         name="webhook-delivery-replay"),
    path("mcp", McpApi.as_view(), name="mcp"),
    path("billing/webhooks/<str:provider>", billing_webhooks.provider_webhook, name="billing-webhook"),
    path("v1/hosting/", include("api.hosting.urls")),
    path("openapi.json", SpectacularJSONAPIView.as_view(), name="openapi"),
    path("docs", SpectacularSwaggerView.as_view(url_name="openapi"), name="api-docs"),
]
