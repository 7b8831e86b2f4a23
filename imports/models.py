"""An import of a calendar or vCard file that runs in the background: the file cut into its items
once (one row each, in file order) and a progress marker. The worker applies the items from
`position` on, deletes them and moves the marker past them in one transaction, so a worker killed at
any moment loses nothing and applies nothing twice."""
from django.db import models


class ImportJob(models.Model):
    class Kind(models.TextChoices):
        EVENTS = "events", "Calendar events (.ics)"
        CONTACTS = "contacts", "Contacts (.vcf)"
        CONTACTS_CSV = "contacts_csv", "Contacts (.csv)"

    class Status(models.TextChoices):
        QUEUED = "queued", "Waiting or importing"
        DONE = "done", "Done"

    account = models.ForeignKey("mailcore.Account", on_delete=models.CASCADE, related_name="import_jobs")
    mailbox = models.ForeignKey("mailcore.Mailbox", on_delete=models.CASCADE, null=True, blank=True,
                                related_name="import_jobs", help_text="The mailbox whose owner started it.")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    calendar = models.ForeignKey("calendars.Calendar", on_delete=models.CASCADE, null=True, blank=True,
                                 related_name="import_jobs", help_text="Where events go (kind events).")
    book = models.ForeignKey("contacts.AddressBook", on_delete=models.CASCADE, null=True, blank=True,
                             related_name="import_jobs", help_text="Where contacts go (kind contacts).")
    filename = models.CharField(max_length=255, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    total = models.PositiveIntegerField(help_text="Items in the file.")
    position = models.PositiveIntegerField(default=0, help_text="Items applied (or refused) so far: the next "
                                                                "item's position.")
    created = models.PositiveIntegerField(default=0)
    updated = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    errors = models.JSONField(default=list, blank=True, help_text="What went wrong with which item (the first "
                                                                  "few hundred).")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "mailcore_importjob"
        indexes = [models.Index(fields=["status", "created_at"])]
        verbose_name = "import job"

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.filename or self.pk}: {self.position}/{self.total}"

    @property
    def done(self) -> bool:
        return self.status == self.Status.DONE

    @property
    def percent(self) -> int:
        return 100 if not self.total else self.position * 100 // self.total


class ImportItem(models.Model):
    job = models.ForeignKey(ImportJob, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField()
    uid = models.TextField(blank=True, help_text="The UID of a calendar object; a CSV row's number (a vCard "
                                                 "carries its own UID in the text).")
    text = models.TextField(help_text="One calendar object or one vCard, as cut out of the file; a CSV row as "
                                      "planned (JSON).")

    class Meta:
        db_table = "mailcore_importitem"
        constraints = [models.UniqueConstraint(fields=["job", "position"], name="importitem_one_per_position")]

    def __str__(self) -> str:
        return f"item {self.position} of {self.job_id}"
