from django.apps import AppConfig

from mailcore.sweep import Job


class ProtectionConfig(AppConfig):
    """Inbound and outbound protection on rspamd: verdicts, sender authentication, Junk that learns,
    the quarantine, allow and block lists."""

    name = "protection"
    verbose_name = "Protection"
    jobs = (
        Job("quarantine-retention", "protection.quarantine:quarantine_retention", 3600),
        Job("quarantine-digest", "protection.digest:quarantine_digests_send", 3600),
    )

    def ready(self) -> None:
        from mailcore.inbound.screening import screening
        from protection.screening import screen

        screening.register(screen)
