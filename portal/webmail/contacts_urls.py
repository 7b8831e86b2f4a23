"""The owner's contacts (portal.webmail.contacts). Included at contacts/."""
from django.urls import path

from portal.webmail import contact_books, contacts

urlpatterns = [
    path("", contacts.contacts, name="contacts"),
    path("new/", contacts.contact_new, name="contact_new"),
    path("select/", contacts.contacts_bulk, name="contacts_bulk"),
    path("import/", contacts.contacts_import_view, name="contacts_import"),
    path("import/<int:job_id>/", contacts.contacts_import_progress, name="contacts_import_progress"),
    path("export/", contacts.contacts_export_view, name="contacts_export"),
    path("books/", contact_books.books_manage, name="contacts_books"),
    path("books/<int:book_id>/", contact_books.book_change, name="contacts_book"),
    path("books/<int:book_id>/delete/", contact_books.book_remove, name="contacts_book_delete"),
    path("groups/", contacts.groups, name="contacts_groups"),
    path("groups/<int:group_id>/", contacts.group_edit, name="contacts_group"),
    path("groups/<int:group_id>/delete/", contacts.group_remove, name="contacts_group_delete"),
    path("<int:contact_id>/", contacts.contact_detail, name="contact"),
    path("<int:contact_id>/edit/", contacts.contact_edit, name="contact_edit"),
    path("<int:contact_id>/delete/", contacts.contact_remove, name="contact_delete"),
]
