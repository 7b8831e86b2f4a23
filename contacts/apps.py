from django.apps import AppConfig


class ContactsConfig(AppConfig):
    """Address books, contacts and groups (the REST API, CardDAV and the webmail read and write them)."""

    name = "contacts"
    verbose_name = "Contacts"

    def ready(self) -> None:
        from contacts.demo import demo_contacts_seed
        from mailcore.demo import demo_mailbox_seeded

        demo_mailbox_seeded.register(demo_contacts_seed)
