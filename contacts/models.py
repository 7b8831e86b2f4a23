"""Address books, contacts and groups: one model that REST, the partner API, webmail and CardDAV
all read and write. Each contact keeps its canonical vCard text (what a sync client gets back,
unknown properties included) plus the fields lifted out of it for search and the JSON APIs.

A book belongs to the account (`mailbox` empty: the integrators' `/contacts`), to one of a hosting
partner's clients (the partner API's contacts and campaign audiences: a client's customers are its
own, never another client's) or to one mailbox (its owner's webmail and phone). A mailbox (or the
account) has a default book, made on first use, and may have more (extended MKCOL, REST)."""
from django.db import models
from django.db.models import Q

from mailcore.changelog import ChangeRecord, SyncedCollection


class AddressBook(SyncedCollection):
    account = models.ForeignKey("mailcore.Account", on_delete=models.CASCADE, related_name="address_books")
    mailbox = models.ForeignKey("mailcore.Mailbox", on_delete=models.CASCADE, null=True, blank=True,
                                related_name="address_books", help_text="Empty: the account's own book.")
    client = models.ForeignKey("mailcore.PartnerClient", on_delete=models.CASCADE, null=True, blank=True,
                               related_name="address_books",
                               help_text="A hosting partner's client: its own book (the partner API's contacts).")
    name = models.CharField(max_length=100, default="Contacts")
    color = models.CharField(max_length=7, default="#2563eb", help_text="#rrggbb: how the webmail marks its contacts.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "mailcore_addressbook"
        constraints = [
            models.UniqueConstraint(fields=["mailbox", "slug"], condition=Q(mailbox__isnull=False),
                                    name="addressbook_slug_unique_per_mailbox"),
            models.UniqueConstraint(fields=["account", "slug"], condition=Q(mailbox__isnull=True, client__isnull=True),
                                    name="addressbook_slug_unique_per_account"),
            models.UniqueConstraint(fields=["mailbox"], condition=Q(mailbox__isnull=False, is_default=True),
                                    name="addressbook_one_default_per_mailbox"),
            models.UniqueConstraint(fields=["account"],
                                    condition=Q(mailbox__isnull=True, client__isnull=True, is_default=True),
                                    name="addressbook_one_default_per_account"),
            models.UniqueConstraint(fields=["client"], condition=Q(client__isnull=False), name="addressbook_one_per_client"),
        ]
        ordering = ["-is_default", "name", "pk"]

    def __str__(self) -> str:
        return f"{self.name} ({self.mailbox or self.account})"


class ContactGroup(models.Model):
    book = models.ForeignKey(AddressBook, on_delete=models.CASCADE, related_name="groups")
    name = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "mailcore_contactgroup"
        constraints = [models.UniqueConstraint(fields=["book", "name"], name="contactgroup_name_unique_per_book")]
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Contact(models.Model):
    book = models.ForeignKey(AddressBook, on_delete=models.CASCADE, related_name="contacts")
    uid = models.CharField(max_length=255, help_text="The vCard UID.")
    href = models.CharField(max_length=255, help_text="The resource name in the CardDAV collection.")
    name = models.CharField(max_length=255)
    email = models.CharField(max_length=320, blank=True)
    phone = models.CharField(max_length=64, blank=True)
    company = models.CharField(max_length=255, blank=True)
    notes = models.TextField(blank=True)
    vcard = models.TextField()
    etag = models.CharField(max_length=64)
    groups = models.ManyToManyField(ContactGroup, related_name="contacts", blank=True, db_table="mailcore_contact_groups")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "mailcore_contact"
        constraints = [
            models.UniqueConstraint(fields=["book", "href"], name="contact_href_unique_per_book"),
            models.UniqueConstraint(fields=["book", "uid"], name="contact_uid_unique_per_book"),
        ]
        indexes = [models.Index(fields=["book", "name"]), models.Index(fields=["book", "email"])]

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>" if self.email else self.name


class ContactChange(ChangeRecord):
    collection = models.ForeignKey(AddressBook, on_delete=models.CASCADE, related_name="changes")

    class Meta:
        db_table = "mailcore_contactchange"
        constraints = [models.UniqueConstraint(fields=["collection", "href"], name="contactchange_one_per_href")]
        indexes = [models.Index(fields=["collection", "revision"])]
