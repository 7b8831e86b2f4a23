"""The owner's calendar (portal.webmail.calendar_pages): views, events, import/export, settings, the feed."""
from django.urls import path

from portal.webmail import calendar_pages

urlpatterns = [
    path("", calendar_pages.calendar_view, name="calendar"),
    path("events/new/", calendar_pages.event_new, name="calendar_event_new"),
    path("events/<int:event_id>/", calendar_pages.event_detail, name="calendar_event"),
    path("events/<int:event_id>/edit/", calendar_pages.event_edit, name="calendar_event_edit"),
    path("events/<int:event_id>/delete/", calendar_pages.event_delete_view, name="calendar_event_delete"),
    path("import/", calendar_pages.calendar_import, name="calendar_import"),
    path("import/<int:job_id>/", calendar_pages.calendar_import_progress, name="calendar_import_progress"),
    path("export.ics", calendar_pages.calendar_download, name="calendar_export"),
    path("settings/", calendar_pages.calendar_settings, name="calendar_settings"),
    path("settings/timezone/", calendar_pages.calendar_timezone_preset, name="calendar_timezone_preset"),
    path("settings/feed/", calendar_pages.calendar_feed_create, name="calendar_feed_create"),
    path("settings/feed/revoke/", calendar_pages.calendar_feed_revoke, name="calendar_feed_revoke"),
    path("feed/<str:token>.ics", calendar_pages.calendar_feed, name="calendar_feed"),
]
