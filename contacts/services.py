"""Writes of address books, contacts and groups. Every change of a contact, by any path, goes
through `_save`/`_remove`, which re-render the vCard, refresh its ETag and log the change for
sync clients, in one transaction."""
import re
import secrets
from dataclasses import dataclass, field

from django.db import transaction

from mailcore.accounts.models import Account
from mailcore.changelog import MAX_COLLECTIONS, change_record, collection_first_use, etag_of, slug_valid
from contacts import vcard
from contacts.models import AddressBook, Contact, ContactGroup
from contacts.selectors import contact_with_email
from mailcore.errors import DomainError, ErrorCode
from mailcore.mailboxes.models import Mailbox

CONTACT_FIELDS = ("name", "email", "phone", "company", "notes")
MAX_IMPORT_CARDS = 5000


class ContactInvalid(DomainError):
    code = ErrorCode.INVALID


class ContactConflict(DomainError):
    """An If-Match / If-None-Match precondition failed, or the UID is taken (HTTP 412 in DAV)."""
    code = ErrorCode.CONFLICT


class AddressBookTaken(DomainError):
    code = ErrorCode.CONFLICT


class AddressBookRefused(DomainError):
    """Past the number of address books, or the default book asked to go."""
    code = ErrorCode.FORBIDDEN


DEFAULT_SLUG = "contacts"
COLOR = re.compile(r"#[0-9a-f]{6}(?:[0-9a-f]{2})?")  # #rrggbbaa as Apple clients send it; the alpha is dropped


def address_book_for(*, account: Account, mailbox: Mailbox | None = None) -> AddressBook:
    """The account's own default book (no mailbox) or the mailbox's, made on first use."""
    if mailbox is not None and mailbox.account_id != account.pk:
        raise ValueError("mailbox of another account")
    return collection_first_use(AddressBook, account=account, mailbox=mailbox, client=None, is_default=True,
                                defaults={"slug": DEFAULT_SLUG})


@transaction.atomic
def address_book_create(*, account: Account, mailbox: Mailbox | None = None, name: str, slug: str = "",
                        color: str = "#2563eb") -> AddressBook:
    """Another address book of the mailbox (or account); `slug` its URL segment (a client's MKCOL names it)."""
    if mailbox is not None and mailbox.account_id != account.pk:
        raise ValueError("mailbox of another account")
    address_book_for(account=account, mailbox=mailbox)
    name = name.strip()
    if not name:
        raise ContactInvalid("An address book needs a name.")
    slug = slug or secrets.token_hex(8)
    if not slug_valid(slug):
        raise ContactInvalid("Not a usable collection name.")
    siblings = AddressBook.objects.filter(account=account, mailbox=mailbox, client=None)
    if siblings.filter(slug=slug).exists():
        raise AddressBookTaken("There is an address book at that address already.")
    if siblings.count() >= MAX_COLLECTIONS:
        raise AddressBookRefused(f"A mailbox may have at most {MAX_COLLECTIONS} address books.")
    return AddressBook.objects.create(account=account, mailbox=mailbox, slug=slug, name=name[:100],
                                      color=_color(color))


@transaction.atomic
def address_book_delete(*, book: AddressBook) -> None:
    """The book and its contacts go; the default book stays (its address is what clients were set up with)."""
    if book.is_default or book.client_id:
        raise AddressBookRefused("The default address book cannot be deleted; delete its contacts instead.")
    book.delete()


@transaction.atomic
def contact_move(*, contact: Contact, book: AddressBook, href: str | None = None,
                 overwrite: bool = True) -> tuple[Contact, bool]:
    """Move a contact to another book of the same owner (or rename it in its own), its vCard kept;
    its groups follow its categories in the new book. Returns it and whether the destination was new."""
    if book.account_id != contact.book.account_id or book.mailbox_id != contact.book.mailbox_id:
        raise ValueError("book of another owner")
    href = href or contact.href
    source, old_href = contact.book, contact.href
    if source.pk == book.pk and old_href == href:
        return contact, False
    taken = Contact.objects.select_for_update().filter(book=book, href=href).first()
    if taken is not None and not overwrite:
        raise ContactConflict("There is a resource at the destination already.")
    if Contact.objects.filter(book=book, uid=contact.uid).exclude(pk=contact.pk).exclude(
            pk=taken.pk if taken else None).exists():
        raise ContactConflict("Another contact in that address book has this UID.")
    if taken is not None:
        taken.delete()
    contact.book, contact.href = book, href
    contact.save(update_fields=["book", "href", "updated_at"])
    contact.groups.set(_groups_named(book, vcard.fields_of(vcard.parse_one(contact.vcard)).groups))
    change_record(source, href=old_href, deleted=True)
    change_record(book, href=href)
    return contact, taken is None


def contact_address_free(*, book: AddressBook, email: str, but: Contact | None = None) -> None:
    """A client's book holds one contact per address (campaigns enrol by address): ContactConflict if taken."""
    other = contact_with_email(book=book, email=email, but=but)
    if other is not None:
        raise ContactConflict(f"Contact {other.pk} has the address {email} already; update that one.")


def client_address_book(*, client) -> AddressBook:
    """A hosting partner's client's own book (the partner API's contacts and campaign audiences)."""
    return collection_first_use(AddressBook, client=client,
                                defaults={"account": client.partner.account, "slug": DEFAULT_SLUG})


def _color(value: str) -> str:
    value = value.strip().lower()
    if not COLOR.fullmatch(value):
        raise ContactInvalid("A colour is # and six hex digits, like #2563eb.")
    return value[:7]


def address_book_update(*, book: AddressBook, name: str | None = None, color: str | None = None) -> AddressBook:
    """Rename or recolour the book (its URL stays); the webmail, REST and CardDAV PROPPATCH all come here."""
    if name is not None:
        if not name.strip():
            raise ContactInvalid("An address book needs a name.")
        book.name = name.strip()[:100]
    if color is not None:
        book.color = _color(color)
    book.save(update_fields=["name", "color"])
    return book


def _groups_named(book: AddressBook, names: list[str]) -> list[ContactGroup]:
    groups = []
    for name in names:
        group, _ = ContactGroup.objects.get_or_create(book=book, name=name.strip()[:100])
        groups.append(group)
    return groups


def _named(fields: vcard.CardFields) -> vcard.CardFields:
    """A contact given only an address is named after it (a vCard needs a name: FN)."""
    if not fields.name.strip():
        if not fields.email:
            raise ContactInvalid("A contact needs a name or an email address.")
        fields.name = fields.email
    return fields


def _save(contact: Contact, fields: vcard.CardFields, *, text: str | None = None) -> Contact:
    """Store the fields (and the vCard: `text` as a client sent it, else rendered), log the change."""
    contact.vcard = text if text is not None else vcard.build(fields, base=contact.vcard or None)
    for name in CONTACT_FIELDS:
        setattr(contact, name, getattr(fields, name))
    contact.etag = etag_of(contact.vcard)
    contact.save()
    contact.groups.set(_groups_named(contact.book, fields.groups))
    change_record(contact.book, href=contact.href)
    return contact


def _fields(contact: Contact) -> vcard.CardFields:
    return vcard.CardFields(uid=contact.uid, name=contact.name, email=contact.email, phone=contact.phone,
                            company=contact.company, notes=contact.notes,
                            groups=[group.name for group in contact.groups.all()])


@transaction.atomic
def contact_create(*, book: AddressBook, name: str = "", email: str = "", phone: str = "", company: str = "",
                   notes: str = "", groups: list[str] | tuple = ()) -> Contact:
    uid = vcard.new_uid()
    contact = Contact(book=book, uid=uid, href=f"{uid}.vcf")
    fields = vcard.CardFields(uid=uid, name=name.strip(), email=email.strip().lower(), phone=phone.strip(),
                              company=company.strip(), notes=notes, groups=list(groups))
    return _save(contact, _named(fields))


@transaction.atomic
def contact_update(*, contact: Contact, groups: list[str] | None = None, **changes) -> Contact:
    """Change the named fields (the rest of the vCard is kept as it was)."""
    unknown = set(changes) - set(CONTACT_FIELDS)
    if unknown:
        raise TypeError(f"unknown contact fields {sorted(unknown)}")
    fields = _fields(contact)
    for name, value in changes.items():
        setattr(fields, name, value.strip().lower() if name == "email" else value.strip() if name != "notes" else value)
    if groups is not None:
        fields.groups = list(groups)
    return _save(contact, _named(fields))


@transaction.atomic
def contact_delete(*, contact: Contact) -> None:
    book, href = contact.book, contact.href
    contact.delete()
    change_record(book, href=href, deleted=True)


def _check_preconditions(existing: Contact | None, *, if_match: str | None, if_none_match: bool) -> None:
    if if_none_match and existing is not None:
        raise ContactConflict("The resource exists already.")
    if if_match is not None and (existing is None or existing.etag != if_match):
        raise ContactConflict("The resource changed since you read it.")


@transaction.atomic
def contact_put(*, book: AddressBook, href: str, text: str, if_match: str | None = None,
                if_none_match: bool = False) -> tuple[Contact, bool]:
    """Store a vCard a client sent (CardDAV PUT) as the resource `href`: kept as sent, fields lifted
    out of it. Returns the contact and whether it was created."""
    card = vcard.parse_one(text)
    fields = vcard.fields_of(card)
    if not fields.uid:
        raise ContactInvalid("The vCard has no UID.")
    existing = Contact.objects.select_for_update().filter(book=book, href=href).first()
    _check_preconditions(existing, if_match=if_match, if_none_match=if_none_match)
    clash = Contact.objects.filter(book=book, uid=fields.uid).exclude(href=href).exists()
    if clash:
        raise ContactConflict("Another contact in this address book has that UID.")
    if not fields.name:
        fields.name = fields.email or fields.company or "(no name)"
    contact = existing or Contact(book=book, href=href)
    contact.uid = fields.uid
    return _save(contact, fields, text=text), existing is None


@dataclass
class ImportResult:
    created: int = 0
    updated: int = 0
    errors: list[str] = field(default_factory=list)


def contacts_import_split(*, text: str) -> list[str]:
    """The vCards of a file, each as text of its own, checked in one linear pass; ContactInvalid
    (nothing to import) for a file that is not vCard, nests too deep, holds no card or too many."""
    try:
        return vcard.split(text, max_cards=MAX_IMPORT_CARDS)
    except vcard.VCardError as exc:
        raise ContactInvalid(str(exc)) from exc


@transaction.atomic
def contact_import_one(*, book: AddressBook, text: str) -> bool:
    """Store one vCard of an import file, updating the contact of the same UID (so applying it twice
    leaves one contact). True when it made a new contact; ContactInvalid/ContactConflict when it cannot."""
    try:
        card = vcard.parse_one(text)
    except vcard.VCardError as exc:
        raise ContactInvalid(str(exc)) from exc
    fields = vcard.fields_of(card)
    if not (fields.name or fields.email):
        raise ContactInvalid("no name and no email address.")
    if not fields.uid:  # the same UID every time this card is applied: derived from its text
        fields.uid = vcard.uid_for(text)
        card.add("uid").value = fields.uid
    existing = Contact.objects.filter(book=book, uid=fields.uid).first()
    href = existing.href if existing else f"{fields.uid}.vcf".replace("/", "_")
    contact_put(book=book, href=href, text=card.serialize())
    return existing is None


@transaction.atomic
def contacts_import(*, book: AddressBook, text: str) -> ImportResult:
    """Add every vCard of a file at once (small files; larger ones go through imports); a
    card whose UID is already in the book updates that contact."""
    result = ImportResult()
    for number, card in enumerate(contacts_import_split(text=text), start=1):
        try:
            created = contact_import_one(book=book, text=card)
        except (ContactInvalid, ContactConflict) as exc:
            result.errors.append(f"Card {number}: {exc.detail}")
            continue
        result.created += created
        result.updated += not created
    return result


def contacts_export(*, contacts) -> str:
    """One .vcf file of these contacts, each as stored."""
    return "".join(contact.vcard if contact.vcard.endswith("\n") else contact.vcard + "\r\n" for contact in contacts)


@transaction.atomic
def group_create(*, book: AddressBook, name: str) -> ContactGroup:
    name = name.strip()
    if not name:
        raise ContactInvalid("A group needs a name.")
    if ContactGroup.objects.filter(book=book, name=name).exists():
        raise ContactConflict(f"There is a group named {name!r} already.")
    return ContactGroup.objects.create(book=book, name=name[:100])


def _rerender_members(group: ContactGroup, *, without: bool = False) -> None:
    for contact in group.contacts.all():
        fields = _fields(contact)
        if without:
            fields.groups = [name for name in fields.groups if name != group.name]
        _save(contact, fields)


@transaction.atomic
def group_rename(*, group: ContactGroup, name: str) -> ContactGroup:
    name = name.strip()
    if not name:
        raise ContactInvalid("A group needs a name.")
    if ContactGroup.objects.filter(book=group.book, name=name).exclude(pk=group.pk).exists():
        raise ContactConflict(f"There is a group named {name!r} already.")
    group.name = name[:100]
    group.save(update_fields=["name"])
    _rerender_members(group)
    return group


@transaction.atomic
def group_delete(*, group: ContactGroup) -> None:
    """The group goes; its contacts stay (their vCards lose the category)."""
    _rerender_members(group, without=True)
    group.delete()


@transaction.atomic
def group_members_set(*, group: ContactGroup, contacts, member: bool) -> None:
    for contact in contacts:
        names = [g.name for g in contact.groups.all()]
        wanted = names + [group.name] if member and group.name not in names else \
            [name for name in names if not (not member and name == group.name)]
        if wanted != names:
            contact_update(contact=contact, groups=wanted)
