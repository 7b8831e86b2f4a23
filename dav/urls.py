"""CardDAV and CalDAV for phones and desktop clients (/dav/, /.well-known/carddav, /.well-known/caldav)."""

urlpatterns: list = []
