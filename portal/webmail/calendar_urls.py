"""The owner's calendar (portal.webmail.calendar_pages): views, import/export, settings, the feed; its
events (portal.webmail.calendar_events); its calendars and tasks (portal.webmail.calendar_lists)."""
from django.urls import path

from portal.webmail import calendar_events, calendar_lists, calendar_pages

urlpatterns = [
    path("", calendar_pages.calendar_view, name="calendar"),
    path("events/new/", calendar_events.event_new, name="calendar_event_new"),
    path("events/<int:event_id>/", calendar_events.event_detail, name="calendar_event"),
    path("events/<int:event_id>/edit/", calendar_events.event_edit, name="calendar_event_edit"),
    path("events/<int:event_id>/delete/", calendar_events.event_delete_view, name="calendar_event_delete"),
    path("import/", calendar_pages.calendar_import, name="calendar_import"),
    path("import/<int:job_id>/", calendar_pages.calendar_import_progress, name="calendar_import_progress"),
    path("calendars/", calendar_lists.calendars_manage, name="calendar_calendars"),
    path("calendars/<int:calendar_id>/", calendar_lists.calendar_change, name="calendar_change"),
    path("calendars/<int:calendar_id>/delete/", calendar_lists.calendar_remove, name="calendar_remove"),
    path("tasks/", calendar_lists.tasks_view, name="calendar_tasks"),
    path("tasks/<int:task_id>/done/", calendar_lists.task_toggle, name="calendar_task_toggle"),
    path("tasks/<int:task_id>/delete/", calendar_lists.task_remove, name="calendar_task_remove"),
    path("export.ics", calendar_pages.calendar_download, name="calendar_export"),
    path("settings/", calendar_pages.calendar_settings, name="calendar_settings"),
    path("settings/timezone/", calendar_pages.calendar_timezone_preset, name="calendar_timezone_preset"),
    path("settings/feed/", calendar_pages.calendar_feed_create, name="calendar_feed_create"),
    path("settings/feed/revoke/", calendar_pages.calendar_feed_revoke, name="calendar_feed_revoke"),
    path("feed/<str:token>.ics", calendar_pages.calendar_feed, name="calendar_feed"),
]
