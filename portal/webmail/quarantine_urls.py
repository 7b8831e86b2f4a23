"""The owner's quarantine (portal.webmail.quarantine), and the digest's one-click release links."""
from django.urls import path

from portal.webmail import quarantine

urlpatterns = [
    path("", quarantine.quarantine_list, name="quarantine"),
    path("<str:public_id>/", quarantine.quarantine_act, name="quarantine_act"),
    path("release/<str:token>", quarantine.quarantine_link_release, name="quarantine_link_release"),
]
