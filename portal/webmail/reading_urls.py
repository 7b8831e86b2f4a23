"""Reading one message: the page, its attachments and source, remote-image consent, the actions on
it (portal.webmail.reading)."""
from django.urls import path

from portal.webmail import reading

urlpatterns = [
    path("folders/<path:name>/messages/<int:uid>/attachments/<int:index>/", reading.attachment, name="attachment"),
    path("folders/<path:name>/messages/<int:uid>/original/", reading.original, name="message_original"),
    path("folders/<path:name>/messages/<int:uid>/actions/", reading.message_action, name="message_action"),
    path("folders/<path:name>/messages/<int:uid>/images/", reading.message_images, name="message_images"),
    path("folders/<path:name>/messages/<int:uid>/invitation/", reading.message_invitation, name="message_invitation"),
    path("folders/<path:name>/messages/<int:uid>/", reading.message, name="message"),
]
