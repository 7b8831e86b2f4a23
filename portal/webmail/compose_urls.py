"""Compose, drafts, reply and forward, undo-send (portal.webmail.compose). Included at compose/."""
from django.urls import path

from portal.webmail import compose

urlpatterns = [
    path("", compose.compose, name="compose"),
    path("reply/<path:name>/<int:uid>/", compose.reply, name="compose_reply"),
    path("reply-all/<path:name>/<int:uid>/", compose.reply_all, name="compose_reply_all"),
    path("forward/<path:name>/<int:uid>/", compose.forward, name="compose_forward"),
    path("drafts/<int:uid>/", compose.draft, name="compose_draft"),
    path("autosave/", compose.autosave, name="compose_autosave"),
    path("sent/<int:scheduled_id>/", compose.sent, name="compose_sent"),
    path("sent/<int:scheduled_id>/undo/", compose.undo, name="compose_undo"),
    path("failures/<int:failure_id>/dismiss/", compose.failure_dismiss, name="compose_failure_dismiss"),
    path("suggest/", compose.suggest, name="compose_suggest"),
]
