"""The owner's contacts (portal.webmail.contacts)."""

urlpatterns: list = []
