"""Portal pages for the contacts of a hosting partner's client, opened from one of the client's
mailboxes: the list (search, group filter), add, edit, delete, groups, CSV import in two steps
(upload -> preview that saves nothing -> import) and CSV export.

The book is the client's own (`client_address_book(client=mailbox.domain.client)`), the same one the
partner API's /v1/hosting/mailboxes/{id}/contacts reads and campaigns reach; the writes are the
contacts services and contacts.csv_io. The mailbox's plan must include contacts
(else a page that says which plan does); another partner's mailbox, contact or group is 404."""
from functools import wraps

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from mailcore.accounts.selectors import plan_gate_message
from contacts.csv_io import MAX_CSV_BYTES, CsvInvalid, contacts_csv_export, contacts_csv_preview
from contacts.models import AddressBook, Contact
from contacts.selectors import book_group_get, book_groups, contact_search, contact_with_email
from contacts.services import (
    ContactConflict, ContactInvalid, client_address_book, contact_create, contact_delete, contact_update,
    group_create, group_delete,
)
from imports.models import ImportJob
from imports.selectors import import_job_of_book
from imports.services import contacts_csv_import_start
from mailcore.partners.models import PartnerMailbox
from mailcore.partners.selectors import partner_mailbox_get
from portal.htmx import regions
from portal.access import found_or_404
from portal.partner.access import become_partner_page
from portal.forms import PortalForm

LIST_TEMPLATE = "portal/contacts/list.html"
EDIT_TEMPLATE = "portal/contacts/edit.html"
IMPORT_TEMPLATE = "portal/contacts/import.html"
CONFIRM_TEMPLATE = "portal/contacts/confirm.html"
GATE_TEMPLATE = "portal/contacts/unavailable.html"
PAGE_SIZE = 100


def client_mailbox_page(feature: str, section: str):
    """A view of one of the partner's mailboxes whose plan has `feature`; the view gets the partner
    mailbox and the client's book. Another partner's mailbox is 404; a plan without the feature, or
    a mailbox whose domain belongs to no client, gets a page that says so (403 / 409)."""

    def decorator(view):
        @login_required
        @wraps(view)
        def wrapped(request, mailbox_id: int, *args, **kwargs):
            partner = getattr(request.user.account, "partner", None)
            if partner is None:
                raise Http404("No such mailbox.")
            if not partner.is_operational:
                return become_partner_page(request, partner, section="Mailboxes", htmx_redirect="portal:mailboxes")
            partner_mailbox = found_or_404(partner_mailbox_get, "mailbox", partner=partner, mailbox_id=mailbox_id)
            mailbox = partner_mailbox.mailbox
            context = {"partner_mailbox": partner_mailbox, "mailbox": mailbox, "section": section}
            if not mailbox.effective_plan.has_feature(feature):
                return render(request, GATE_TEMPLATE, {**context, "reason": "plan",
                                                       "message": plan_gate_message(feature)}, status=403)
            client = mailbox.domain.client
            if client is None:
                return render(request, GATE_TEMPLATE, {**context, "reason": "client"}, status=409)
            return view(request, partner_mailbox, client_address_book(client=client), *args, **kwargs)

        return wrapped

    return decorator


contacts_page = client_mailbox_page("contacts", "Contacts")


def _url(partner_mailbox: PartnerMailbox, name: str = "mailbox-contacts", **kwargs) -> str:
    return reverse(f"portal:{name}", kwargs={"mailbox_id": partner_mailbox.pk, **kwargs})


# forms


class ContactForm(PortalForm):
    name = forms.CharField(label="Name", max_length=255, required=False)
    email = forms.EmailField(label="Email", max_length=320,
                             widget=forms.EmailInput(attrs={"autocomplete": "off", "spellcheck": "false"}))
    phone = forms.CharField(label="Phone", max_length=64, required=False)
    company = forms.CharField(label="Company", max_length=255, required=False)
    notes = forms.CharField(label="Notes", required=False, max_length=10_000,
                            widget=forms.Textarea(attrs={"rows": 3}))
    groups = forms.MultipleChoiceField(label="Groups", required=False, widget=forms.CheckboxSelectMultiple)

    def __init__(self, *args, book: AddressBook, contact: Contact | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.book, self.contact = book, contact
        self.fields["groups"].choices = [(group.name, group.name) for group in book_groups(book=book)]
        if not self.fields["groups"].choices:
            del self.fields["groups"]

    def clean_email(self) -> str:
        email = self.cleaned_data["email"].strip().lower()
        if contact_with_email(book=self.book, email=email, but=self.contact) is not None:
            raise forms.ValidationError(f"{email} is in these contacts already.")
        return email


class GroupForm(PortalForm):
    name = forms.CharField(label="New group", max_length=100,
                           widget=forms.TextInput(attrs={"placeholder": "Customers", "autocomplete": "off"}))


class ContactFilterForm(forms.Form):
    q = forms.CharField(label="Search", required=False, max_length=200,
                        widget=forms.TextInput(attrs={"type": "search", "placeholder": "Name, email or company"}))
    group = forms.TypedChoiceField(label="Group", required=False, coerce=int, empty_value=None)

    def __init__(self, *args, groups, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["group"].choices = [("", "All contacts"), *((group.pk, group.name) for group in groups)]


class CsvUploadForm(PortalForm):
    file = forms.FileField(label="CSV file", help_text="A header row naming the columns: email (required), name, "
                                                        "phone, company, notes, group. At most 2 MB.")

    def clean_file(self) -> str:
        upload = self.cleaned_data["file"]
        if upload.size > MAX_CSV_BYTES:
            raise forms.ValidationError(f"The file is larger than {MAX_CSV_BYTES // (1024 * 1024)} MB.")
        try:
            return upload.read().decode("utf-8")
        except UnicodeDecodeError:
            raise forms.ValidationError("The file is not UTF-8 text. Save it from your spreadsheet as "
                                        "“CSV UTF-8”.") from None


class CsvApplyForm(forms.Form):
    text = forms.CharField(widget=forms.HiddenInput, strip=False, max_length=MAX_CSV_BYTES)


# the list, add, groups


def _list_context(request, partner_mailbox: PartnerMailbox, book: AddressBook, **forms_) -> dict:
    groups = list(book_groups(book=book))
    filter_form = ContactFilterForm(request.GET or None, groups=groups)
    filters = filter_form.cleaned_data if filter_form.is_valid() else {}
    group = next((found for found in groups if found.pk == filters.get("group")), None)
    contacts = Contact.objects.filter(book=book).prefetch_related("groups")
    if group is not None:
        contacts = contacts.filter(groups=group)
    contacts = contact_search(contacts, filters.get("q") or "").order_by("name", "email", "pk")
    total = contacts.count()
    return {
        "partner_mailbox": partner_mailbox, "mailbox": partner_mailbox.mailbox, "book": book,
        "client": book.client, "groups": groups, "filter_form": filter_form,
        "filtered": bool(filters.get("q") or group), "contacts": contacts[:PAGE_SIZE], "total": total,
        "more": max(0, total - PAGE_SIZE),
        "contact_form": forms_.get("contact_form") or ContactForm(book=book, auto_id="id_new_%s"),
        "group_form": forms_.get("group_form") or GroupForm(auto_id="id_group_%s"),
        "book_size": Contact.objects.filter(book=book).count(),
    }


@require_GET
@contacts_page
def contacts(request, partner_mailbox, book):
    context = _list_context(request, partner_mailbox, book)
    if request.htmx and request.htmx.target == "contacts":  # the search and the group filter
        return regions(request, LIST_TEMPLATE, ["contacts"], context)
    return render(request, LIST_TEMPLATE, context)


def _groups_of(form: forms.Form) -> list[str]:
    return list(form.cleaned_data.get("groups") or [])


@require_POST
@contacts_page
def contact_add(request, partner_mailbox, book):
    form = ContactForm(request.POST, book=book, auto_id="id_new_%s")
    if form.is_valid():
        data = form.cleaned_data
        created = contact_create(book=book, name=data["name"], email=data["email"], phone=data["phone"],
                                 company=data["company"], notes=data["notes"], groups=_groups_of(form))
        messages.success(request, f"{created.name or created.email} added to {book.client.name}'s contacts.")
        if request.htmx:
            return regions(request, LIST_TEMPLATE, ["contact-add", "contacts", "contacts-heading"],
                           _list_context(request, partner_mailbox, book))
        return redirect(_url(partner_mailbox))
    context = _list_context(request, partner_mailbox, book, contact_form=form)
    if request.htmx:
        return regions(request, LIST_TEMPLATE, ["contact-add"], context)
    return render(request, LIST_TEMPLATE, context, status=422)


@require_POST
@contacts_page
def group_add(request, partner_mailbox, book):
    form = GroupForm(request.POST, auto_id="id_group_%s")
    if form.is_valid():
        try:
            group = group_create(book=book, name=form.cleaned_data["name"])
        except (ContactInvalid, ContactConflict) as exc:
            form.add_error("name", exc.detail)
        else:
            messages.success(request, f"Group {group.name} created.")
            if request.htmx:
                return HttpResponseClientRedirect(_url(partner_mailbox))  # the add form's checkboxes change too
            return redirect(_url(partner_mailbox))
    context = _list_context(request, partner_mailbox, book, group_form=form)
    if request.htmx:
        return regions(request, LIST_TEMPLATE, ["contact-groups"], context)
    return render(request, LIST_TEMPLATE, context, status=422)


@require_http_methods(["GET", "POST"])
@contacts_page
def group_remove(request, partner_mailbox, book, group_id: int):
    """GET asks (without JavaScript); POST deletes the group, its contacts stay."""
    group = found_or_404(book_group_get, "group", book=book, group_id=group_id)
    if request.method == "GET":
        return render(request, CONFIRM_TEMPLATE, {"partner_mailbox": partner_mailbox, "mailbox": partner_mailbox.mailbox,
                                                  "book": book, "group": group, "members": group.contacts.count()})
    group_delete(group=group)
    messages.success(request, f"Group {group.name} deleted. Its contacts are kept.")
    url = _url(partner_mailbox)
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


# one contact


def _contact(book: AddressBook, contact_id: int) -> Contact:
    return found_or_404(Contact.objects.prefetch_related("groups").get, "contact", book=book, pk=contact_id)


@require_http_methods(["GET", "POST"])
@contacts_page
def contact_edit(request, partner_mailbox, book, contact_id: int):
    contact = _contact(book, contact_id)
    initial = {"name": contact.name, "email": contact.email, "phone": contact.phone, "company": contact.company,
               "notes": contact.notes, "groups": [group.name for group in contact.groups.all()]}
    form = ContactForm(request.POST if request.method == "POST" else None, book=book, contact=contact,
                       initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        groups = _groups_of(form) if "groups" in form.fields else None
        contact_update(contact=contact, groups=groups, name=data["name"], email=data["email"], phone=data["phone"],
                       company=data["company"], notes=data["notes"])
        messages.success(request, f"{contact.name or contact.email} saved.")
        url = _url(partner_mailbox)
        return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    context = {"partner_mailbox": partner_mailbox, "mailbox": partner_mailbox.mailbox, "book": book,
               "contact": contact, "form": form}
    if request.htmx and request.method == "POST":
        return regions(request, EDIT_TEMPLATE, ["contact-form"], context)
    return render(request, EDIT_TEMPLATE, context, status=422 if request.method == "POST" else 200)


@require_http_methods(["GET", "POST"])
@contacts_page
def contact_remove(request, partner_mailbox, book, contact_id: int):
    contact = _contact(book, contact_id)
    if request.method == "GET":
        return render(request, CONFIRM_TEMPLATE, {"partner_mailbox": partner_mailbox, "mailbox": partner_mailbox.mailbox,
                                                  "book": book, "contact": contact})
    contact_delete(contact=contact)
    messages.success(request, f"{contact.name or contact.email} deleted.")
    url = _url(partner_mailbox)
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


# CSV


@require_http_methods(["GET", "POST"])
@contacts_page
def contacts_import(request, partner_mailbox, book):
    """Two steps: the upload answers with the preview (per-row action and errors; nothing saved) and a
    form that carries the same text back; posting that form imports."""
    context = {"partner_mailbox": partner_mailbox, "mailbox": partner_mailbox.mailbox, "book": book}
    if request.method == "GET":
        return render(request, IMPORT_TEMPLATE, {**context, "upload_form": CsvUploadForm()})
    if "text" in request.POST:  # step two: apply what was previewed
        apply_form = CsvApplyForm(request.POST)
        if apply_form.is_valid():
            try:
                report, job = contacts_csv_import_start(book=book, text=apply_form.cleaned_data["text"])
            except CsvInvalid as exc:
                upload_form = CsvUploadForm()
                upload_form.add_error(None, exc.detail)
                return render(request, IMPORT_TEMPLATE, {**context, "upload_form": upload_form}, status=422)
            if job is not None:
                return redirect(_url(partner_mailbox, "mailbox-contacts-import-progress", job_id=job.pk))
            totals = report.totals
            messages.success(request, f"Imported: {totals['create']} contact{'s' if totals['create'] != 1 else ''} "
                                      f"added, {totals['update']} updated, {totals['skip']} skipped.")
            return redirect(_url(partner_mailbox))
        return render(request, IMPORT_TEMPLATE, {**context, "upload_form": CsvUploadForm()}, status=422)
    upload_form = CsvUploadForm(request.POST, request.FILES)
    if upload_form.is_valid():
        text = upload_form.cleaned_data["file"]
        try:
            report = contacts_csv_preview(book=book, text=text)
        except CsvInvalid as exc:
            upload_form.add_error("file", exc.detail)
        else:
            totals = report.totals
            return render(request, IMPORT_TEMPLATE, {
                **context, "report": report, "totals": totals, "applying": totals["create"] + totals["update"],
                "apply_form": CsvApplyForm(initial={"text": text}), "filename": request.FILES["file"].name})
    return render(request, IMPORT_TEMPLATE, {**context, "upload_form": upload_form}, status=422)


@require_GET
@contacts_page
def contacts_import_progress(request, partner_mailbox, book, job_id: int):
    """A large import goes on in the background after the preview's button: how far it has got (htmx polls)."""
    job = found_or_404(import_job_of_book, "import", book=book, job_id=job_id, kind=ImportJob.Kind.CONTACTS_CSV)
    context = {"partner_mailbox": partner_mailbox, "mailbox": partner_mailbox.mailbox, "book": book, "job": job,
               "noun": "contact",
               "progress_url": _url(partner_mailbox, "mailbox-contacts-import-progress", job_id=job.pk),
               "done_url": _url(partner_mailbox), "done_label": "Show the contacts",
               "again_url": _url(partner_mailbox, "mailbox-contacts-import")}
    if request.htmx:
        return render(request, "components/import_progress.html", context)
    return render(request, "portal/contacts/import_progress.html", context)


@require_GET
@contacts_page
def contacts_export(request, partner_mailbox, book):
    """Every contact of the book (or of ?group=) as CSV."""
    contacts = Contact.objects.filter(book=book).prefetch_related("groups").order_by("name", "email", "pk")
    group_id = request.GET.get("group", "")
    if group_id.isdigit():
        group = found_or_404(book_group_get, "group", book=book, group_id=int(group_id))
        contacts = contacts.filter(groups=group)
    response = HttpResponse(contacts_csv_export(contacts=contacts), content_type="text/csv; charset=utf-8")
    slug = "".join(char if char.isalnum() else "-" for char in book.client.name.lower()).strip("-") or "contacts"
    response["Content-Disposition"] = f'attachment; filename="{slug}-contacts.csv"'
    response["X-Content-Type-Options"] = "nosniff"
    return response
