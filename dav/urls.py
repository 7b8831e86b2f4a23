"""CardDAV and CalDAV for phones and desktop clients (/dav/, /.well-known/carddav, /.well-known/caldav).
One catch-all route: dav.tree walks the tree itself, with or without a trailing slash
(Django's APPEND_SLASH would answer a PROPFIND with a redirect)."""
from django.urls import re_path

from dav import views

urlpatterns = [
    re_path(r"^\.well-known/(?P<service>carddav|caldav)/?$", views.well_known, name="dav-well-known"),
    re_path(r"^dav(?:/(?P<path>.*))?$", views.dav, name="dav"),
]
