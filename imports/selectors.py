"""Reads of import jobs, scoped to who may see them."""
from contacts.models import AddressBook
from imports.models import ImportJob
from mailcore.mailboxes.models import Mailbox


def import_job_of_mailbox(*, mailbox: Mailbox, job_id: int, kind: str) -> ImportJob:
    """One of this mailbox's imports of that kind; ImportJob.DoesNotExist for any other mailbox's."""
    return ImportJob.objects.get(pk=job_id, mailbox=mailbox, kind=kind)


def import_jobs_running(*, mailbox: Mailbox, kind: str) -> list[ImportJob]:
    """This mailbox's imports of that kind that are not done yet, oldest first."""
    return list(ImportJob.objects.filter(mailbox=mailbox, kind=kind, status=ImportJob.Status.QUEUED).order_by("pk"))


def import_job_of_book(*, book: AddressBook, job_id: int, kind: str) -> ImportJob:
    """One of the imports of that kind into this book (a client's); ImportJob.DoesNotExist for any other."""
    return ImportJob.objects.get(pk=job_id, book=book, kind=kind)
