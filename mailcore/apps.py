from django.apps import AppConfig


class MailcoreConfig(AppConfig):
    name = "mailcore"
    verbose_name = "Mail core"

    def ready(self) -> None:
        from mailcore.webmail import alias_changes

        alias_changes.connect()
