"""Reading one message: the page, its attachments, remote-image consent (portal.webmail.reading)."""
from django.urls import path

from portal.webmail import views

urlpatterns = [
    path("folders/<path:name>/messages/<int:uid>/", views.message, name="message"),
]
