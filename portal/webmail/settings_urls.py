"""The owner's settings: password, identity, forwarding, filters, vacation (portal.webmail.owner_settings)."""

urlpatterns: list = []
