from django.urls import path

from api.hosting import billing, management, payg, views

urlpatterns = [
    path("domains", views.HostingDomainListApi.as_view()),
    path("domains/<int:domain_id>", views.HostingDomainDetailApi.as_view()),
    path("domains/<int:domain_id>/verify", views.HostingDomainVerifyApi.as_view()),
    path("clients", views.HostingClientListApi.as_view()),
    path("clients/<int:client_id>", views.HostingClientDetailApi.as_view()),
    path("settings", views.HostingSettingsApi.as_view()),
    path("mailboxes", views.HostingMailboxListApi.as_view()),
    path("mailboxes/<int:mailbox_id>", views.HostingMailboxDetailApi.as_view()),
    path("mailboxes/<int:mailbox_id>/renew", views.HostingMailboxRenewApi.as_view()),
    path("stats", views.HostingStatsApi.as_view()),
    path("addons/pricing", billing.HostingAddonPricingApi.as_view()),
    path("addons/purchase", billing.HostingAddonPurchaseApi.as_view()),
    path("addons/purchase/verify", billing.HostingPurchaseVerifyApi.as_view()),
    path("slots", billing.HostingSlotPoolApi.as_view()),
    path("slots/purchase", billing.HostingSlotPurchaseApi.as_view()),
    path("retail-pricing", payg.HostingRetailPricingApi.as_view()),
    path("mailboxes/<int:mailbox_id>/subscription", payg.HostingPaygSubscriptionApi.as_view()),
    path("mailboxes/<int:mailbox_id>/cancel-subscription", payg.HostingPaygCancelApi.as_view()),
    path("mailboxes/<int:mailbox_id>/upgrade", payg.HostingPaygUpgradeApi.as_view()),
    path("mailboxes/<int:mailbox_id>/addons/purchase", payg.HostingPaygAddonApi.as_view()),
    path("summary", views.HostingSummaryApi.as_view()),
    # mailbox management
    path("mailboxes/<int:mailbox_id>/forwarding", management.HostingForwardingListApi.as_view()),
    path("mailboxes/<int:mailbox_id>/forwarding/<int:rule_id>", management.HostingForwardingDetailApi.as_view()),
    path("mailboxes/<int:mailbox_id>/aliases", management.HostingAliasListApi.as_view()),
    path("mailboxes/<int:mailbox_id>/aliases/<int:alias_id>", management.HostingAliasDetailApi.as_view()),
    path("mailboxes/<int:mailbox_id>/identity", management.HostingIdentityApi.as_view()),
    path("forwarding/confirm/<str:token>", management.ForwardingConfirmApi.as_view()),
]
