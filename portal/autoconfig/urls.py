"""Mail-client autoconfiguration on partner domains (Thunderbird autoconfig, Outlook autodiscover).
Included at the root of the platform's names and of partners' webmail hostnames, and the only
URLconf of `autoconfig.<domain>` / `autodiscover.<domain>` (portal.autoconfig.middleware)."""
from django.urls import path

from portal.autoconfig import views

urlpatterns = [
    path("mail/config-v1.1.xml", views.thunderbird, name="autoconfig-thunderbird"),
    path(".well-known/autoconfig/mail/config-v1.1.xml", views.thunderbird, name="autoconfig-thunderbird-well-known"),
    # draft-ietf-mailmaint-autoconfig's first URL (autoconfig.<domain>, then the domain itself): the same document
    path(".well-known/mail-v1.xml", views.thunderbird, name="autoconfig-mail-v1"),
    path("autodiscover/autodiscover.xml", views.outlook, name="autodiscover"),
    path("Autodiscover/Autodiscover.xml", views.outlook, name="autodiscover-capitalised"),
]
