from django.apps import AppConfig


class ProtectionConfig(AppConfig):
    """Inbound and outbound protection on rspamd: verdicts, sender authentication, Junk that learns,
    the quarantine, allow and block lists."""

    name = "protection"
    verbose_name = "Protection"

    def ready(self) -> None:
        from mailcore.inbound.screening import screening
        from mailcore.sending.screening import outbound_screening
        from protection.outbound import outbound_screen
        from protection.screening import screen

        screening.register(screen)
        outbound_screening.register(outbound_screen)
