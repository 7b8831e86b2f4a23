"""The progress page of a background import, one for the calendar's events and the contacts: each app
wraps it in its own plan gate and frame and names what it imports."""
from collections.abc import Callable

from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from imports.models import ImportJob
from imports.selectors import import_job_of_mailbox


def import_progress(request, mailbox, job_id: int, *, kind: str, noun: str, app: str, done_label: str,
                    page: Callable[[dict], HttpResponse]) -> HttpResponse:
    """How far a background import has got; the region polls itself (htmx) while it runs. `app` is the
    webmail app whose URLs it links to (webmail:<app>, <app>_import, <app>_import_progress); `page`
    renders the whole page around the region."""
    try:
        job = import_job_of_mailbox(mailbox=mailbox, job_id=job_id, kind=kind)
    except ImportJob.DoesNotExist:
        raise Http404("No such import.") from None
    context = {"job": job, "noun": noun,
               "progress_url": reverse(f"webmail:{app}_import_progress", args=[job.pk]),
               "done_url": reverse(f"webmail:{app}"), "done_label": done_label,
               "again_url": reverse(f"webmail:{app}_import")}
    if request.htmx:
        return render(request, "components/import_progress.html", context)
    return page(context)
