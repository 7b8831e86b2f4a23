from django.apps import AppConfig


class CalendarsConfig(AppConfig):
    """Calendars, events and tasks, iCalendar and invitations (iMIP)."""

    name = "calendars"
    verbose_name = "Calendars"

    def ready(self) -> None:
        from calendars.demo import demo_events_seed
        from calendars.services import mailbox_feeds_revoke
        from mailcore.demo import demo_mailbox_seeded
        from mailcore.holders import mailbox_holder_forgotten

        mailbox_holder_forgotten.register(mailbox_feeds_revoke)
        demo_mailbox_seeded.register(demo_events_seed)
