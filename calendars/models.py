"""Calendars, events and tasks: one model that REST, webmail, invitations and CalDAV all read and write.
A mailbox (or the account) has a default calendar, made on first use, and may have more (made by a
sync client's MKCALENDAR, REST or the webmail). Each CalendarEvent row is one calendar object
resource: an event (VEVENT: the master and any overridden occurrences, RECURRENCE-ID) or a task
(VTODO), exactly as a CalDAV client stores it; the columns are what is lifted out of the master for
range queries, the JSON API and the pages. Times are UTC in the columns; `timezone` keeps the zone
the event was written in (its recurrences follow it)."""
from django.db import models
from django.db.models import Q

from mailcore.changelog import ChangeRecord, SyncedCollection


COMPONENTS = ("VEVENT", "VTODO")


class Calendar(SyncedCollection):
    account = models.ForeignKey("mailcore.Account", on_delete=models.CASCADE, related_name="calendars")
    mailbox = models.ForeignKey("mailcore.Mailbox", on_delete=models.CASCADE, null=True, blank=True,
                                related_name="calendars", help_text="Empty: the account's own calendar.")
    name = models.CharField(max_length=100, default="Calendar")
    color = models.CharField(max_length=7, default="#2563eb")
    timezone = models.CharField(max_length=64, blank=True,
                                help_text="IANA zone the owner sees the calendar in (webmail, new events); empty: UTC.")
    feed_token_digest = models.CharField(max_length=64, null=True, blank=True, unique=True,
                                         help_text="SHA-256 of the read-only .ics feed's token; empty: no feed.")
    components = models.CharField(max_length=40, default="VEVENT,VTODO",
                                  help_text="What it holds (comma-separated VEVENT, VTODO); fixed when it is made.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "mailcore_calendar"
        constraints = [
            models.UniqueConstraint(fields=["mailbox", "slug"], condition=Q(mailbox__isnull=False),
                                    name="calendar_slug_unique_per_mailbox"),
            models.UniqueConstraint(fields=["account", "slug"], condition=Q(mailbox__isnull=True),
                                    name="calendar_slug_unique_per_account"),
            models.UniqueConstraint(fields=["mailbox"], condition=Q(mailbox__isnull=False, is_default=True),
                                    name="calendar_one_default_per_mailbox"),
            models.UniqueConstraint(fields=["account"], condition=Q(mailbox__isnull=True, is_default=True),
                                    name="calendar_one_default_per_account"),
        ]
        ordering = ["-is_default", "name", "pk"]

    def __str__(self) -> str:
        return f"{self.name} ({self.mailbox or self.account})"

    @property
    def component_set(self) -> list[str]:
        return [name for name in self.components.split(",") if name]

    def holds(self, component: str) -> bool:
        return component in self.component_set


class CalendarEvent(models.Model):
    """One calendar object resource: an event, or a task (`component` VTODO)."""

    class Component(models.TextChoices):
        EVENT = "VEVENT", "Event"
        TASK = "VTODO", "Task"

    calendar = models.ForeignKey(Calendar, on_delete=models.CASCADE, related_name="events")
    component = models.CharField(max_length=10, choices=Component.choices, default=Component.EVENT)
    uid = models.CharField(max_length=255, help_text="The iCalendar UID, stable across invitations.")
    href = models.CharField(max_length=255, help_text="The resource name in the CalDAV collection.")
    title = models.CharField(max_length=255)
    description = models.TextField(blank=True)
    location = models.CharField(max_length=255, blank=True)
    color = models.CharField(max_length=7, blank=True)
    start = models.DateTimeField(null=True, blank=True, help_text="Empty only for a task without DTSTART.")
    end = models.DateTimeField(null=True, blank=True, help_text="Empty only for a task.")
    all_day = models.BooleanField(default=False, help_text="Dates, not times (for a task: its due date).")
    due = models.DateTimeField(null=True, blank=True, help_text="A task's DUE; empty: no due date.")
    completed_at = models.DateTimeField(null=True, blank=True, help_text="A task's COMPLETED; empty: not done.")
    priority = models.PositiveSmallIntegerField(default=0, help_text="A task's PRIORITY: 1 highest, 9 lowest, 0 none.")
    status = models.CharField(max_length=20, blank=True, help_text="The STATUS value (a task: NEEDS-ACTION, "
                              "IN-PROCESS, COMPLETED, CANCELLED).")
    timezone = models.CharField(max_length=64, blank=True, help_text="IANA zone of the times; empty: UTC.")
    recurrence = models.CharField(max_length=255, blank=True, help_text="The RRULE value; empty: one occurrence.")
    range_end = models.DateTimeField(null=True, blank=True,
                                     help_text="End of the last occurrence; empty: the series never ends.")
    is_series = models.BooleanField(default=False,
                                    help_text="RRULE, RDATE or overridden occurrences: only these are expanded to "
                                              "answer a time range; [start, range_end) decides for the rest.")
    organizer = models.CharField(max_length=320, blank=True)
    attendees = models.JSONField(default=list, blank=True, help_text='[{"email", "name", "status"}]')
    sequence = models.PositiveIntegerField(default=0)
    ical = models.TextField()
    etag = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "mailcore_calendarevent"
        constraints = [
            models.UniqueConstraint(fields=["calendar", "href"], name="event_href_unique_per_calendar"),
            models.UniqueConstraint(fields=["calendar", "uid"], name="event_uid_unique_per_calendar"),
        ]
        indexes = [models.Index(fields=["calendar", "start"]), models.Index(fields=["calendar", "range_end"]),
                   models.Index(fields=["calendar", "component", "due"])]

    def __str__(self) -> str:
        return self.title

    @property
    def is_task(self) -> bool:
        return self.component == self.Component.TASK

    @property
    def attendee_emails(self) -> list[str]:
        return [attendee["email"] for attendee in self.attendees]


class CalendarEventChange(ChangeRecord):
    collection = models.ForeignKey(Calendar, on_delete=models.CASCADE, related_name="changes")

    class Meta:
        db_table = "mailcore_calendareventchange"
        constraints = [models.UniqueConstraint(fields=["collection", "href"], name="eventchange_one_per_href")]
        indexes = [models.Index(fields=["collection", "revision"])]
