from django.apps import AppConfig


class MailcoreConfig(AppConfig):
    name = "mailcore"
    verbose_name = "Mail core"
