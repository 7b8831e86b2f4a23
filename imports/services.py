"""Imports of .ics and .vcf files. A file is checked and cut into items in one linear pass
(contentlines, through the calendar and contact services) before anything is written; a refused
file changes nothing. A small file is applied at once, in the request; a larger one becomes an
ImportJob that the worker's `imports` job applies item by item, with progress the owner can watch.
Either way each item goes through the same service as a sync client's PUT (event_import_one,
contact_import_one), and applying a few items, deleting them and moving the job's marker past them
are one transaction: killed at any moment, a worker applies each item exactly once."""
import json
import logging
import time
from dataclasses import asdict

from django.db import connection, transaction
from django.utils import timezone

from calendars.ical import CalendarObjectText
from calendars.models import Calendar
from calendars.services import EventConflict, EventInvalid, event_import_one, events_import_split
from contacts import csv_io
from contacts.models import AddressBook
from contacts.services import ContactConflict, ContactInvalid, contact_import_one, contacts_import_split
from imports.models import ImportItem, ImportJob

log = logging.getLogger(__name__)

# About 10 ms an item (parse, render, change log): up to this many are applied within the request.
INLINE_MAX_ITEMS = 100
BATCH_SECONDS = 5  # a run of the worker's job stops after the transaction that takes it past this
ITEMS_PER_TRANSACTION = 20
# SQLite lets one writer in at a time, and not in turn: without a pause between transactions an import
# would keep the lock and the worker's other jobs (mail!) and the web server would wait out their timeout.
SQLITE_PAUSE_SECONDS = 0.02
MAX_KEPT_ERRORS = 200
ITEM_REFUSALS = (EventInvalid, EventConflict, ContactInvalid, ContactConflict)


def _job_create(*, kind: str, items: list[tuple[str, str]], filename: str, calendar: Calendar | None = None,
                book: AddressBook | None = None) -> ImportJob:
    target = calendar or book
    with transaction.atomic():
        job = ImportJob.objects.create(account_id=target.account_id, mailbox_id=target.mailbox_id, kind=kind,
                                       calendar=calendar, book=book, filename=filename[:255], total=len(items))
        ImportItem.objects.bulk_create([ImportItem(job=job, position=position, uid=uid, text=text)
                                        for position, (uid, text) in enumerate(items)], batch_size=500)
    if job.total <= INLINE_MAX_ITEMS:
        import_job_advance(job_id=job.pk, budget_seconds=None)
        job.refresh_from_db()
    return job


def events_import_start(*, calendar: Calendar, text: str, filename: str = "") -> ImportJob:
    """Import an .ics file into `calendar`: done when it returns for a small file, else in the background.
    EventInvalid (nothing written) for a file that cannot be imported."""
    objects = events_import_split(text=text)
    return _job_create(kind=ImportJob.Kind.EVENTS, calendar=calendar, filename=filename,
                       items=[(obj.uid, obj.text) for obj in objects])


def contacts_import_start(*, book: AddressBook, text: str, filename: str = "") -> ImportJob:
    """Import a .vcf file into `book`: done when it returns for a small file, else in the background.
    ContactInvalid (nothing written) for a file that cannot be imported."""
    cards = contacts_import_split(text=text)
    return _job_create(kind=ImportJob.Kind.CONTACTS, book=book, filename=filename,
                       items=[("", card) for card in cards])


def contacts_csv_import_start(*, book: AddressBook, text: str, filename: str = "") -> tuple[csv_io.CsvReport,
                                                                                            ImportJob | None]:
    """Import a CSV file into a client's book: its report, and None when the rows were applied at once
    (a small file, report.applied), else the ImportJob that applies them in the background. CsvInvalid
    (nothing written) for a file that cannot be read."""
    report = csv_io.contacts_csv_preview(book=book, text=text)
    rows = [row for row in report.rows if row.action != "skip"]
    if len(rows) <= INLINE_MAX_ITEMS:
        return csv_io.contacts_csv_import(book=book, text=text), None
    job = _job_create(kind=ImportJob.Kind.CONTACTS_CSV, book=book, filename=filename,
                      items=[(str(row.row), json.dumps(asdict(row))) for row in rows])
    return report, job


def _apply(job: ImportJob, item: ImportItem) -> bool:
    if job.kind == ImportJob.Kind.EVENTS:
        return event_import_one(calendar=job.calendar, obj=CalendarObjectText(uid=item.uid, text=item.text))
    if job.kind == ImportJob.Kind.CONTACTS_CSV:
        return csv_io.contacts_csv_apply_row(book=job.book, row=csv_io.CsvRow(**json.loads(item.text)))
    return contact_import_one(book=job.book, text=item.text)


def _label(job: ImportJob, item: ImportItem) -> str:
    """The item as its owner knows it: the event or card's place in the file, a CSV row's number."""
    if job.kind == ImportJob.Kind.CONTACTS_CSV:
        return f"Row {item.uid}"
    return f"{'Event' if job.kind == ImportJob.Kind.EVENTS else 'Card'} {item.position + 1}"


def _claim(job_id: int) -> ImportJob | None:
    """The job, locked for this transaction (another worker on it skips it), or None when done or taken."""
    rows = ImportJob.objects.filter(pk=job_id, status=ImportJob.Status.QUEUED).select_related("calendar", "book")
    if connection.features.has_select_for_update_skip_locked:
        rows = rows.select_for_update(skip_locked=True, of=("self",))
    return rows.first()


def _refused(job: ImportJob, item: ImportItem, message: str) -> None:
    job.failed += 1
    if len(job.errors) < MAX_KEPT_ERRORS:
        job.errors = [*job.errors, f"{_label(job, item)}: {message}"]


def _step(job_id: int) -> int:
    """Apply the job's next few items, in one transaction with its marker; how many (0: none left, or
    another worker holds the job)."""
    with transaction.atomic():
        job = _claim(job_id)
        if job is None:
            return 0
        items = list(ImportItem.objects.filter(job=job, position__gte=job.position)
                     .order_by("position")[:ITEMS_PER_TRANSACTION])
        for item in items:
            try:
                with transaction.atomic():
                    created = _apply(job, item)
            except ITEM_REFUSALS as exc:
                _refused(job, item, exc.detail)
            except Exception:  # a bug must not stop the rest of the file, nor retry this item for ever
                log.exception("import job %s: item %s failed", job.pk, item.position)
                _refused(job, item, "could not be imported.")
            else:
                job.created += created
                job.updated += not created
            job.position = item.position + 1
        ImportItem.objects.filter(job=job, position__lt=job.position).delete()
        if not items or job.position >= job.total:
            job.status, job.finished_at = ImportJob.Status.DONE, timezone.now()
        job.save(update_fields=["position", "created", "updated", "failed", "errors", "status", "finished_at"])
    return len(items)


def import_job_advance(*, job_id: int, budget_seconds: float | None = BATCH_SECONDS) -> int:
    """Apply the job's items in order until it is done (or the budget is spent); how many were applied."""
    started, applied = time.monotonic(), 0
    while handled := _step(job_id):
        applied += handled
        if budget_seconds is not None and time.monotonic() - started > budget_seconds:
            break
        if connection.vendor == "sqlite":
            time.sleep(SQLITE_PAUSE_SECONDS)
    return applied


def imports_run_due() -> int:
    """The worker's `imports` job: advance the oldest unfinished import for a few seconds; how many
    items it applied (while it applies any, the sweep runs it again at once)."""
    for job_id in ImportJob.objects.filter(status=ImportJob.Status.QUEUED).order_by("created_at", "pk") \
            .values_list("pk", flat=True)[:10]:
        applied = import_job_advance(job_id=job_id)
        if applied:
            return applied
    return 0
