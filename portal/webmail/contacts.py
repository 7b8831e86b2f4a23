"""The owner's contacts in the webmail: the list (search, group filter, paging), a contact's page,
new/edit/delete, groups (create, rename, delete, add or remove many contacts at once), vCard import
and export. The list shows every book of the mailbox (or one, ?book=); a contact is made in the book
its form names (the default, `address_book_for(account=, mailbox=)`, preselected) and moves when it
changes; groups and the sidebar's group links are the default book's. The books are what phones sync
over CardDAV; reads go through contacts.selectors, writes through contacts.services,
so every change re-renders the vCard and moves the sync token.
Every page is a plain form or link; with htmx the search and paging swap only the list."""
import re
from dataclasses import dataclass
from functools import wraps
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.db import transaction
from django.db.models import Count
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.text import slugify
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from mailcore.accounts.selectors import plan_gate_message
from contacts.models import AddressBook, Contact, ContactGroup
from contacts.selectors import (
    address_book_list,
    book_group_get,
    book_groups,
    contact_list,
    mailbox_contact_get,
)
from contacts.services import (
    ContactConflict,
    ContactInvalid,
    address_book_for,
    contact_create,
    contact_delete,
    contact_move,
    contact_update,
    contacts_export,
    group_create,
    group_delete,
    group_members_set,
    group_rename,
)
from mailcore.errors import DomainError
from imports.models import ImportJob
from imports.selectors import import_jobs_running
from imports.services import contacts_import_start
from mailcore.paging import MAX_PAGE, page_window
from webmail.drafts import format_address
from portal.forms import PortalForm
from portal.webmail.access import owner_required
from portal.webmail.import_progress import import_progress

PER_PAGE = 50
IMPORT_MAX_BYTES = 5 * 1024 * 1024
NOTES_MAX = 10_000
BULK_MAX = 500  # contacts ticked in one go (a page holds 50)
PHONE_CHARACTERS = re.compile(r"^[0-9+()./\- ]*(?:(?:ext\.?|x) ?[0-9]+)?$", re.IGNORECASE)
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


# forms


class ContactSearchForm(forms.Form):
    q = forms.CharField(label="Search contacts", required=False, max_length=200)
    group = forms.IntegerField(required=False, min_value=1)
    book = forms.IntegerField(required=False, min_value=1)
    page = forms.IntegerField(required=False, min_value=1, max_value=MAX_PAGE)


def _one_line(value: str, label: str) -> str:
    if CONTROL.search(value):
        raise forms.ValidationError(f"The {label} must be one line of text.")
    return value


class ContactForm(PortalForm):
    """A contact's fields as the owner types them; groups are ticked by name, plus one new name."""

    name = forms.CharField(label="Name", max_length=255,
                           widget=forms.TextInput(attrs={"autocomplete": "off", "placeholder": "Ann Lee"}))
    email = forms.EmailField(label="Email", required=False, max_length=320,
                             widget=forms.EmailInput(attrs={"autocomplete": "off",
                                                            "placeholder": "ann@example.com"}))
    phone = forms.CharField(label="Phone", required=False, max_length=64,
                            widget=forms.TextInput(attrs={"type": "tel", "autocomplete": "off",
                                                          "placeholder": "+44 20 7946 0958"}))
    company = forms.CharField(label="Company", required=False, max_length=255)
    notes = forms.CharField(label="Notes", required=False, max_length=NOTES_MAX, strip=False,
                            widget=forms.Textarea(attrs={"rows": 4}))
    book = forms.TypedChoiceField(label="Address book", coerce=int)
    groups = forms.MultipleChoiceField(label="Groups", required=False, widget=forms.CheckboxSelectMultiple)
    new_group = forms.CharField(label="New group", required=False, max_length=100,
                                help_text="Type a name to make a group and put this contact in it.")

    def __init__(self, data=None, *args, group_names: list[str], books: list[AddressBook], current: AddressBook,
                 editing: bool = False, **kwargs):
        if data is not None and "book" not in data:  # a post that names no book keeps `current`
            data = data.copy()
            data["book"] = str(current.pk)
        super().__init__(data, *args, **kwargs)
        self.fields["groups"].choices = [(name, name) for name in group_names]
        self.books = {book.pk: book for book in books}
        self.fields["book"].choices = [(pk, book.name) for pk, book in self.books.items()]
        if editing:
            self.fields["book"].help_text = "Changing it moves the contact; phones see it in the other book."

    def chosen_book(self) -> AddressBook:
        return self.books[self.cleaned_data["book"]]

    def clean_name(self):
        return _one_line(self.cleaned_data["name"], "name")

    def clean_company(self):
        return _one_line(self.cleaned_data["company"], "company")

    def clean_new_group(self):
        return _one_line(self.cleaned_data["new_group"], "group name")

    def clean_phone(self):
        phone = self.cleaned_data["phone"]
        if not PHONE_CHARACTERS.match(phone) or (phone and not any(char.isdigit() for char in phone)):
            raise forms.ValidationError("Enter a phone number: digits, spaces, + ( ) - . / and an optional "
                                        "extension (\u201cext 12\u201d).")
        return phone

    def contact_input(self) -> dict:
        data = self.cleaned_data
        groups = list(data["groups"])
        if data["new_group"] and data["new_group"] not in groups:
            groups.append(data["new_group"])
        return {"name": data["name"], "email": data["email"], "phone": data["phone"], "company": data["company"],
                "notes": data["notes"], "groups": groups}

    @classmethod
    def initial_for(cls, contact: Contact) -> dict:
        return {"book": contact.book_id, "name": contact.name, "email": contact.email, "phone": contact.phone,
                "company": contact.company, "notes": contact.notes, "groups": [group.name for group in contact.groups.all()]}


class GroupForm(PortalForm):
    name = forms.CharField(label="Group name", max_length=100,
                           widget=forms.TextInput(attrs={"autocomplete": "off", "placeholder": "Family"}))

    def clean_name(self):
        return _one_line(self.cleaned_data["name"], "group name")


class ImportForm(PortalForm):
    file = forms.FileField(label="vCard file (.vcf)",
                           help_text="One or more vCards (version 3 or 4), as phones, Gmail, Outlook and Apple "
                                     "Contacts export them. Up to 5 MB.",
                           widget=forms.ClearableFileInput(attrs={"accept": ".vcf,.vcard,text/vcard,text/x-vcard"}))

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > IMPORT_MAX_BYTES:
            raise forms.ValidationError(f"The file is {upload.size / 1048576:.1f} MB; it may be at most 5 MB.")
        raw = upload.read()
        for encoding in ("utf-8-sig", "cp1252"):  # vCard 4 is UTF-8; older exports are often Windows text
            try:
                return raw.decode(encoding)
            except UnicodeDecodeError:
                continue
        raise forms.ValidationError("The file is not text: choose a .vcf file.")


class BulkGroupForm(forms.Form):
    action = forms.ChoiceField(choices=[("add", "Add to group"), ("remove", "Remove from group")])
    group = forms.IntegerField(min_value=1, error_messages={"required": "Choose a group."})
    contacts = forms.TypedMultipleChoiceField(coerce=int, error_messages={"required": "Tick at least one contact."})
    back = forms.CharField(required=False, max_length=2000)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Any number is a valid choice here: the view looks each id up in the owner's own book.
        self.fields["contacts"].valid_value = lambda value: str(value).isdigit()


# access


def _posted(request):
    """The POST data, so that an empty POST is a bound (invalid) form, not an unbound one."""
    return request.POST if request.method == "POST" else None


def contacts_required(view):
    """The signed-in owner, their book, and only on a plan with contacts (else a 403 page that says why)."""

    @owner_required
    @wraps(view)
    def wrapped(request, mailbox, *args, **kwargs):
        if not mailbox.effective_plan.has_feature("contacts"):
            return render(request, "webmail/contacts/not_in_plan.html",
                          {"mailbox": mailbox, "webmail_app": "contacts",
                           "gate_message": plan_gate_message("contacts")}, status=403)
        book = address_book_for(account=mailbox.account, mailbox=mailbox)
        return view(request, mailbox, book, *args, **kwargs)

    return wrapped


def _contact_or_404(mailbox, contact_id: int) -> Contact:
    try:
        return mailbox_contact_get(mailbox=mailbox, contact_id=contact_id)
    except Contact.DoesNotExist:
        raise Http404("No such contact.") from None


def book_or_404(mailbox, book_id: int) -> AddressBook:
    """One of the mailbox's books; any other (another mailbox's, a partner client's) is a 404."""
    book = address_book_list(account=mailbox.account, mailbox=mailbox).filter(pk=book_id).first()
    if book is None:
        raise Http404("No such address book.")
    return book


def _books_with_counts(mailbox) -> list[AddressBook]:
    return list(address_book_list(account=mailbox.account, mailbox=mailbox).annotate(size=Count("contacts")))


def _group_names(mailbox) -> list[str]:
    """The names of the groups of every book of the mailbox (a name ticked makes the group in the contact's book)."""
    books = address_book_list(account=mailbox.account, mailbox=mailbox)
    return sorted({group.name for book in books for group in book_groups(book=book)}, key=str.casefold)


def _group_or_404(book: AddressBook, group_id: int) -> ContactGroup:
    try:
        return book_group_get(book=book, group_id=group_id)
    except ContactGroup.DoesNotExist:
        raise Http404("No such group.") from None


def _with_write_to(contact: Contact) -> Contact:
    """What the Write link puts in compose's To: "Name <address>"."""
    contact.write_to = format_address(contact.name, contact.email) if contact.email else ""
    return contact


def _groups_with_counts(book: AddressBook) -> list[ContactGroup]:
    return list(book_groups(book=book).annotate(size=Count("contacts")))


def _page(request, mailbox, book, template: str, context: dict, *, status: int = 200):
    groups = context.pop("groups", None)
    if groups is None:
        groups = _groups_with_counts(book)
    books = _books_with_counts(mailbox)
    return render(request, template, {"mailbox": mailbox, "book": book, "webmail_app": "contacts", "groups": groups,
                                      "books": books, "book_size": sum(each.size for each in books), **context},
                  status=status)


# the list


@dataclass
class ContactPage:
    """What components/pagination.html reads, for one window of page_window."""

    number: int
    total: int
    size: int

    @property
    def num_pages(self) -> int:
        return max(1, -(-self.total // self.size))

    @property
    def paginator(self):
        return self

    def has_previous(self) -> bool:
        return self.number > 1

    def has_next(self) -> bool:
        return self.number < self.num_pages

    def has_other_pages(self) -> bool:
        return self.num_pages > 1

    def previous_page_number(self) -> int:
        return self.number - 1

    def next_page_number(self) -> int:
        return self.number + 1


@require_GET
@contacts_required
def contacts(request, mailbox, book):
    form = ContactSearchForm(request.GET)
    form.is_valid()  # a bad page or group number falls back to the first page, every contact
    data = {name: value for name, value in form.cleaned_data.items() if name not in form.errors}
    search, page_number = data.get("q") or "", data.get("page") or 1
    group = shown_book = None
    if data.get("group"):
        group = _group_or_404(book, data["group"])
    if data.get("book"):
        shown_book = book_or_404(mailbox, data["book"])
    rows = contact_list(account=mailbox.account, mailbox=mailbox, search=search, group=group, book=shown_book)
    total = rows.count()
    found = [_with_write_to(contact)
             for contact in page_window(rows.prefetch_related("groups"), page=page_number, size=PER_PAGE)]
    query = urlencode([(name, value) for name, value in (("q", search), ("group", group and group.pk),
                                                         ("book", shown_book and shown_book.pk)) if value])
    context = {"contacts": found, "total": total, "search": search, "group": group, "shown_book": shown_book,
               "query": query,
               "page": ContactPage(number=page_number, total=total, size=PER_PAGE),
               "back": request.get_full_path()}
    if request.htmx:
        return _page(request, mailbox, book, "webmail/contacts/list.html#contact-list", context)
    return _page(request, mailbox, book, "webmail/contacts/list.html", context)


@require_POST
@contacts_required
def contacts_bulk(request, mailbox, book):
    """Add the ticked contacts to a group, or take them out of it; back to the list as it was."""
    form = BulkGroupForm(request.POST)
    back = request.POST.get("back", "")
    if not back.startswith(reverse("webmail:contacts")):
        back = reverse("webmail:contacts")
    if not form.is_valid():
        for errors in form.errors.values():
            messages.error(request, " ".join(errors))
        return redirect(back)
    group = _group_or_404(book, form.cleaned_data["group"])
    ids = form.cleaned_data["contacts"][:BULK_MAX]
    chosen = list(contact_list(account=mailbox.account, mailbox=mailbox).filter(pk__in=ids).prefetch_related("groups"))
    if len(chosen) != len(set(ids)):
        raise Http404("No such contact.")
    adding = form.cleaned_data["action"] == "add"
    group_members_set(group=group, contacts=chosen, member=adding)
    count = f"{len(chosen)} contact{'s' if len(chosen) != 1 else ''}"
    messages.success(request, f"{count} added to {group.name}." if adding else f"{count} taken out of {group.name}.")
    return redirect(back)


# one contact


@require_GET
@contacts_required
def contact_detail(request, mailbox, book, contact_id: int):
    contact = _with_write_to(_contact_or_404(mailbox, contact_id))
    return _page(request, mailbox, book, "webmail/contacts/detail.html", {"contact": contact})


def _save_contact(form: ContactForm, save) -> Contact | None:
    if not form.is_valid():
        return None
    try:
        return save(form.contact_input())
    except DomainError as exc:  # ContactInvalid: e.g. a vCard the library cannot render
        form.add_error(None, exc.detail)
        return None


@require_http_methods(["GET", "POST"])
@contacts_required
def contact_new(request, mailbox, book):
    books = list(address_book_list(account=mailbox.account, mailbox=mailbox))
    initial = {"book": book.pk}
    if request.method == "GET":  # "New contact" from a group's or a book's list starts in it
        chosen, in_book = request.GET.get("group", ""), request.GET.get("book", "")
        initial = {"groups": [g.name for g in book_groups(book=book) if str(g.pk) == chosen],
                   "book": next((each.pk for each in books if str(each.pk) == in_book), book.pk),
                   "email": request.GET.get("email", "")[:320], "name": request.GET.get("name", "")[:255]}
    form = ContactForm(_posted(request), group_names=_group_names(mailbox), books=books, current=book,
                       initial=initial)
    if request.method == "POST":
        contact = _save_contact(form, lambda data: contact_create(book=form.chosen_book(), **data))
        if contact is not None:
            where = "your contacts" if contact.book.is_default else contact.book.name
            messages.success(request, f"{contact.name} added to {where}.")
            return redirect("webmail:contact", contact.pk)
        return _page(request, mailbox, book, "webmail/contacts/edit.html", {"form": form, "contact": None},
                     status=400)
    return _page(request, mailbox, book, "webmail/contacts/edit.html", {"form": form, "contact": None})


@transaction.atomic
def _update_and_move(contact: Contact, book: AddressBook, data: dict) -> Contact:
    """The new fields, then the chosen book (its groups follow by name); a UID clash there undoes both."""
    contact = contact_update(contact=contact, **data)
    if book.pk != contact.book_id:
        contact, _ = contact_move(contact=contact, book=book)
    return contact


@require_http_methods(["GET", "POST"])
@contacts_required
def contact_edit(request, mailbox, book, contact_id: int):
    contact = _contact_or_404(mailbox, contact_id)
    form = ContactForm(_posted(request), group_names=_group_names(mailbox),
                       books=list(address_book_list(account=mailbox.account, mailbox=mailbox)),
                       current=contact.book, editing=True, initial=ContactForm.initial_for(contact))
    if request.method == "POST":
        saved = _save_contact(form, lambda data: _update_and_move(contact, form.chosen_book(), data))
        if saved is not None:
            messages.success(request, f"{saved.name} saved.")
            return redirect("webmail:contact", saved.pk)
        return _page(request, mailbox, book, "webmail/contacts/edit.html", {"form": form, "contact": contact},
                     status=400)
    return _page(request, mailbox, book, "webmail/contacts/edit.html", {"form": form, "contact": contact})


@require_http_methods(["GET", "POST"])
@contacts_required
def contact_remove(request, mailbox, book, contact_id: int):
    contact = _contact_or_404(mailbox, contact_id)
    if request.method == "GET":
        return _page(request, mailbox, book, "webmail/contacts/delete.html", {"contact": contact})
    contact_delete(contact=contact)
    messages.success(request, f"{contact.name} deleted from your contacts.")
    return redirect("webmail:contacts")


# groups


@require_http_methods(["GET", "POST"])
@contacts_required
def groups(request, mailbox, book):
    form = GroupForm(_posted(request))
    if request.method == "POST":
        if form.is_valid():
            try:
                group = group_create(book=book, name=form.cleaned_data["name"])
            except (ContactInvalid, ContactConflict) as exc:
                form.add_error("name", exc.detail)
            else:
                messages.success(request, f"Group {group.name} made. Tick contacts in the list to add them.")
                return redirect("webmail:contacts_groups")
        return _page(request, mailbox, book, "webmail/contacts/groups.html", {"form": form}, status=400)
    return _page(request, mailbox, book, "webmail/contacts/groups.html", {"form": form})


@require_http_methods(["GET", "POST"])
@contacts_required
def group_edit(request, mailbox, book, group_id: int):
    """Rename a group (its contacts' vCards follow)."""
    group = _group_or_404(book, group_id)
    form = GroupForm(_posted(request), initial={"name": group.name}, prefix=f"group-{group.pk}")
    if request.method == "POST":
        if form.is_valid():
            old = group.name
            try:
                group_rename(group=group, name=form.cleaned_data["name"])
            except (ContactInvalid, ContactConflict) as exc:
                form.add_error("name", exc.detail)
            else:
                messages.success(request, f"Group {old} renamed to {group.name}.")
                return redirect("webmail:contacts_groups")
        return _page(request, mailbox, book, "webmail/contacts/group_edit.html", {"form": form, "group": group},
                     status=400)
    return _page(request, mailbox, book, "webmail/contacts/group_edit.html", {"form": form, "group": group})


@require_http_methods(["GET", "POST"])
@contacts_required
def group_remove(request, mailbox, book, group_id: int):
    group = _group_or_404(book, group_id)
    if request.method == "GET":
        return _page(request, mailbox, book, "webmail/contacts/group_delete.html",
                     {"group": group, "members": group.contacts.count()})
    name = group.name
    group_delete(group=group)
    messages.success(request, f"Group {name} deleted; its contacts are still in your contacts.")
    return redirect("webmail:contacts_groups")


# vCard files


@require_http_methods(["GET", "POST"])
@contacts_required
def contacts_import_view(request, mailbox, book):
    """A small file is imported before the page answers; a larger one goes on in the background and
    the answer is its progress page."""
    form = ImportForm(request.POST, request.FILES) if request.method == "POST" else ImportForm()
    result = None
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                job = contacts_import_start(book=book, text=form.cleaned_data["file"],
                                            filename=request.FILES["file"].name)
            except ContactInvalid as exc:
                form.add_error("file", f"Nothing was imported: {exc.detail}")
            else:
                if not job.done:
                    return redirect("webmail:contacts_import_progress", job_id=job.pk)
                result, status, form = job, 200, ImportForm()
    return _page(request, mailbox, book, "webmail/contacts/import.html", {
        "form": form, "result": result,
        "running": import_jobs_running(mailbox=mailbox, kind=ImportJob.Kind.CONTACTS)}, status=status)


@require_GET
@contacts_required
def contacts_import_progress(request, mailbox, book, job_id: int):
    return import_progress(request, mailbox, job_id, kind=ImportJob.Kind.CONTACTS, noun="contact", app="contacts",
                           done_label="Show my contacts",
                           page=lambda context: _page(request, mailbox, book, "webmail/contacts/import_progress.html",
                                                      context))


@require_GET
@contacts_required
def contacts_export_view(request, mailbox, book):
    """Every contact, or one group's (?group=) or one address book's (?book=), as one .vcf download."""
    group = shown_book = None
    group_id, book_id = request.GET.get("group", ""), request.GET.get("book", "")
    if group_id:
        if not group_id.isdigit():
            raise Http404("No such group.")
        group = _group_or_404(book, int(group_id))
    if book_id:
        if not book_id.isdigit():
            raise Http404("No such address book.")
        shown_book = book_or_404(mailbox, int(book_id))
    rows = contact_list(account=mailbox.account, mailbox=mailbox, group=group, book=shown_book)
    response = HttpResponse(contacts_export(contacts=rows.iterator()), content_type="text/vcard; charset=utf-8")
    named = group or shown_book
    name = f"contacts-{slugify(named.name) or 'group'}.vcf" if named else "contacts.vcf"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response
