from django.apps import AppConfig


class ProtectionConfig(AppConfig):
    """Inbound and outbound protection on rspamd: verdicts, sender authentication, Junk that learns,
    the quarantine, allow and block lists."""

    name = "protection"
    verbose_name = "Protection"

    def ready(self) -> None:
        from mailcore.inbound.screening import screening
        from protection.screening import screen

        screening.register(screen)
