"""Compose, drafts, reply and forward, undo-send (portal.webmail.compose)."""

urlpatterns: list = []
