from django.apps import AppConfig


class MailcoreConfig(AppConfig):
    name = "mailcore"
    verbose_name = "Mail core"

    def ready(self) -> None:
        from mailcore import checks  # noqa: F401  (registers the production start-up checks)
        from mailcore.campaigns import feedback as campaign_feedback
        from mailcore.webmail import alias_changes

        alias_changes.connect()
        campaign_feedback.connect()  # campaign deliveries hear what became of their mail
