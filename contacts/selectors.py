"""Reads of contacts, scoped to the caller: an account (REST, partner API) or one mailbox (webmail, CardDAV)."""
from django.db.models import F, Q, QuerySet

from mailcore.accounts.models import Account
from contacts.models import AddressBook, Contact, ContactGroup
from mailcore.mailboxes.models import Mailbox


def contact_search(contacts: QuerySet[Contact], search: str) -> QuerySet[Contact]:
    """Contacts whose name, email or company contains the words of `search` (each word somewhere)."""
    for word in search.split():
        contacts = contacts.filter(Q(name__icontains=word) | Q(email__icontains=word) | Q(company__icontains=word))
    return contacts


def contact_list(*, account: Account, mailbox: Mailbox | None = None, only_account_book: bool = False,
                 search: str = "", group: ContactGroup | None = None,
                 book: AddressBook | None = None) -> QuerySet[Contact]:
    """The account's contacts (every book of it), or one mailbox's, or only the account's own book (or `book`)."""
    contacts = Contact.objects.filter(book__account=account).select_related("book__mailbox")
    if book is not None:
        contacts = contacts.filter(book=book)
    if mailbox is not None:
        contacts = contacts.filter(book__mailbox=mailbox)
    elif only_account_book:
        contacts = contacts.filter(book__mailbox__isnull=True, book__client__isnull=True)
    if group is not None:
        contacts = contacts.filter(groups=group)
    return contact_search(contacts, search).order_by("name", "pk")


def contact_get(*, account: Account, contact_id: int) -> Contact:
    """The account's contact; another account's is Contact.DoesNotExist."""
    return Contact.objects.select_related("book__mailbox").get(book__account=account, pk=contact_id)


def mailbox_book(*, mailbox: Mailbox) -> AddressBook | None:
    """The mailbox's default book (None before its first use)."""
    return AddressBook.objects.filter(mailbox=mailbox, is_default=True).first()


def address_book_list(*, account: Account, mailbox: Mailbox | None = None) -> QuerySet[AddressBook]:
    """The books of one mailbox, or (no mailbox) the account's own, default first."""
    books = AddressBook.objects.filter(account=account, mailbox=mailbox, client=None)
    return books.order_by("-is_default", "name", "pk")


def account_address_books(*, account: Account, mailbox: Mailbox | None = None) -> QuerySet[AddressBook]:
    """Every book of the account (its own and its mailboxes', not partner clients'), or one mailbox's."""
    books = AddressBook.objects.filter(account=account, client=None).select_related("mailbox")
    if mailbox is not None:
        books = books.filter(mailbox=mailbox)
    return books.order_by(F("mailbox__address").asc(nulls_first=True), "-is_default", "name", "pk")


def address_book_get(*, account: Account, book_id: int) -> AddressBook:
    """The account's book (its own or a mailbox's); any other is AddressBook.DoesNotExist."""
    return AddressBook.objects.select_related("mailbox").get(account=account, client=None, pk=book_id)


def address_book_by_slug(*, account: Account, mailbox: Mailbox | None, slug: str) -> AddressBook | None:
    return AddressBook.objects.filter(account=account, mailbox=mailbox, client=None, slug=slug).first()


def mailbox_contact_get(*, mailbox: Mailbox, contact_id: int) -> Contact:
    """A contact in the mailbox's own book; any other is Contact.DoesNotExist."""
    return Contact.objects.select_related("book").get(book__mailbox=mailbox, pk=contact_id)


def book_groups(*, book: AddressBook) -> QuerySet[ContactGroup]:
    return ContactGroup.objects.filter(book=book)


def book_group_get(*, book: AddressBook, group_id: int) -> ContactGroup:
    return ContactGroup.objects.get(book=book, pk=group_id)


def contact_with_email(*, book: AddressBook, email: str, but: Contact | None = None) -> Contact | None:
    """The book's contact with this address (any case), other than `but`."""
    others = Contact.objects.filter(book=book, email__iexact=email.strip())
    if but is not None:
        others = others.exclude(pk=but.pk)
    return others.first()
