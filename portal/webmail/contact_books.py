"""The owner's address books in the webmail: make, rename, recolour and delete them (the same
collections phones sync over CardDAV), as the Calendars page does for calendars. The default book
stays. Every write goes through contacts.services."""
from django import forms
from django.contrib import messages
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods, require_POST

from contacts.services import (
    AddressBookRefused,
    AddressBookTaken,
    ContactInvalid,
    address_book_create,
    address_book_delete,
    address_book_update,
)
from portal.webmail.calendar_forms import SWATCHES, _hex_color
from portal.webmail.contacts import _page, book_or_404, contacts_required


class AddressBookForm(forms.Form):
    """An address book of the mailbox: made here, or renamed and recoloured in place."""
    name = forms.CharField(label="Name", max_length=100,
                           widget=forms.TextInput(attrs={"autocomplete": "off", "placeholder": "Work"}))
    color = forms.CharField(label="Colour", max_length=7, initial="#16a34a",
                            widget=forms.TextInput(attrs={"type": "color"}))

    def clean_color(self):
        return _hex_color(self.cleaned_data["color"])


def _books_page(request, mailbox, book, form, *, status=200):
    return _page(request, mailbox, book, "webmail/contacts/books.html", {"form": form, "swatches": SWATCHES},
                 status=status)


@require_http_methods(["GET", "POST"])
@contacts_required
def books_manage(request, mailbox, book):
    form = AddressBookForm(request.POST or None)
    if request.method == "POST":
        if form.is_valid():
            try:
                made = address_book_create(account=mailbox.account, mailbox=mailbox, name=form.cleaned_data["name"],
                                           color=form.cleaned_data["color"])
            except (ContactInvalid, AddressBookRefused, AddressBookTaken) as exc:
                form.add_error(None, exc.detail)
            else:
                messages.success(request, f"“{made.name}” added. Your phone and desktop apps show it at their "
                                          "next sync.")
                return redirect("webmail:contacts_books")
        return _books_page(request, mailbox, book, form, status=400)
    return _books_page(request, mailbox, book, form)


@require_POST
@contacts_required
def book_change(request, mailbox, book, book_id: int):
    target = book_or_404(mailbox, book_id)
    form = AddressBookForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(error for errors in form.errors.values() for error in errors))
        return redirect("webmail:contacts_books")
    address_book_update(book=target, name=form.cleaned_data["name"], color=form.cleaned_data["color"])
    messages.success(request, f"“{target.name}” saved.")
    return redirect("webmail:contacts_books")


@require_http_methods(["GET", "POST"])
@contacts_required
def book_remove(request, mailbox, book, book_id: int):
    target = book_or_404(mailbox, book_id)
    if request.method == "POST":
        try:
            address_book_delete(book=target)
        except AddressBookRefused as exc:
            messages.error(request, exc.detail)
        else:
            messages.success(request, f"“{target.name}” and the contacts in it deleted.")
        return redirect("webmail:contacts_books")
    return _page(request, mailbox, book, "webmail/contacts/book_delete.html",
                 {"target": target, "count": target.contacts.count()})
