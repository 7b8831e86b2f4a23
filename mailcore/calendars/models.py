"""Calendars and events: one model that REST, webmail, invitations and CalDAV all read and write.
Each event is one calendar object resource: its iCalendar text holds the master VEVENT and any
overridden occurrences (RECURRENCE-ID), exactly as a CalDAV client stores it; the columns are
what is lifted out of the master for range queries, the JSON API and the pages. Times are UTC in
the columns; `timezone` keeps the zone the event was written in (its recurrences follow it)."""
from django.db import models
from django.db.models import Q

from mailcore.changelog import ChangeRecord, SyncedCollection


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
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["mailbox"], condition=Q(mailbox__isnull=False), name="calendar_one_per_mailbox"),
            models.UniqueConstraint(fields=["account"], condition=Q(mailbox__isnull=True), name="calendar_one_per_account"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.mailbox or self.account})"


class CalendarEvent(models.Model):
    calendar = models.ForeignKey(Calendar, on_delete=models.CASCADE, related_name="events")
    uid = models.CharField(max_length=255, help_text="The iCalendar UID, stable across invitations.")
    href = models.CharField(max_length=255, help_text="The resource name in the CalDAV collection.")
    title = models.CharField(max_length=255)
    description = models.TextField(blank=True)
    location = models.CharField(max_length=255, blank=True)
    color = models.CharField(max_length=7, blank=True)
    start = models.DateTimeField()
    end = models.DateTimeField()
    all_day = models.BooleanField(default=False)
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
        constraints = [
            models.UniqueConstraint(fields=["calendar", "href"], name="event_href_unique_per_calendar"),
            models.UniqueConstraint(fields=["calendar", "uid"], name="event_uid_unique_per_calendar"),
        ]
        indexes = [models.Index(fields=["calendar", "start"]), models.Index(fields=["calendar", "range_end"])]

    def __str__(self) -> str:
        return self.title

    @property
    def attendee_emails(self) -> list[str]:
        return [attendee["email"] for attendee in self.attendees]


class CalendarEventChange(ChangeRecord):
    collection = models.ForeignKey(Calendar, on_delete=models.CASCADE, related_name="changes")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["collection", "href"], name="eventchange_one_per_href")]
        indexes = [models.Index(fields=["collection", "revision"])]
