"""The owner's calendar (portal.webmail.calendar)."""

urlpatterns: list = []
