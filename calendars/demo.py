"""The demo mailbox's sample events (mailcore.demo), once: only into an empty calendar."""
from datetime import timedelta

from django.utils import timezone

from calendars.services import calendar_for, event_create
from mailcore.mailboxes.models import Mailbox


def demo_events_seed(*, mailbox: Mailbox) -> None:
    calendar = calendar_for(account=mailbox.account, mailbox=mailbox)
    if not calendar.events.exists():
        today = timezone.now().replace(minute=0, second=0, microsecond=0)
        monday = (today - timedelta(days=today.weekday())).replace(hour=9)
        event_create(calendar=calendar, title="Team standup", start=monday, end=monday + timedelta(minutes=30),
                     recurrence="FREQ=WEEKLY;BYDAY=MO,WE,FR;COUNT=24", color="#16a34a")
        event_create(calendar=calendar, title="Bakery delivery", start=monday + timedelta(days=4, hours=5),
                     end=monday + timedelta(days=4, hours=6), location="Back door", color="#d97706")
        event_create(calendar=calendar, title="Market day", start=monday + timedelta(days=5),
                     end=monday + timedelta(days=5), all_day=True)
