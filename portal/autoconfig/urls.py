"""Mail-client autoconfiguration on partner domains (Thunderbird autoconfig, Outlook autodiscover)."""

urlpatterns: list = []
