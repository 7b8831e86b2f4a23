"""Contacts as CSV, for a client's book (the partner API and the partner portal call the same three
functions): a preview that changes nothing and says per row what an import would do, the import
itself, and the export.

The file: UTF-8 (a BOM is dropped), comma-separated, a header row naming columns out of COLUMNS in
any case and order (`email` is required; other names are reported in `unknown_columns` and
ignored). Row numbers count the header as row 1, as spreadsheets do. A row whose address is
already in the book updates that contact (non-empty cells replace the field; empty cells leave it
as it was), others create one (named after the address when the name is empty); `group` adds the contact to that group (made if missing, its other
groups kept). A row with an error, or one that would change nothing, is skipped.

Export guards against CSV injection (formula injection): a cell that starts with = + - @, a tab, a
carriage return or a quote mark ' gets a ' in front, so a spreadsheet shows it as text instead of
running it; import takes that one ' off again, so an export imports back unchanged."""
import csv
import io
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.db.models.functions import Lower

from contacts.models import AddressBook, Contact
from contacts.services import ContactInvalid, contact_create, contact_update

COLUMNS = ("email", "name", "phone", "company", "notes", "group")
MAX_LENGTHS = {"email": 320, "name": 255, "phone": 64, "company": 255, "notes": 10_000, "group": 100}
MAX_CSV_BYTES = 2 * 1024 * 1024
# Each row goes through the contact services (vCard, change log for sync clients): about 8 ms a row,
# so a synchronous import stays under a minute. Same bound as the vCard import.
MAX_CSV_ROWS = 5_000
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_UNSAFE_ADDRESS = set('"<>\\()[],;: ')


class CsvInvalid(ContactInvalid):
    """The file as a whole cannot be read (too large, no header, no email column)."""


@dataclass
class CsvRow:
    row: int
    email: str = ""
    name: str = ""
    phone: str = ""
    company: str = ""
    notes: str = ""
    group: str = ""
    action: str = "skip"  # create | update | skip
    errors: list[str] = field(default_factory=list)
    contact_id: int | None = None  # the contact it updates (preview) or made/updated (import)


@dataclass
class CsvReport:
    rows: list[CsvRow]
    columns: list[str]
    unknown_columns: list[str]
    applied: bool = False

    @property
    def totals(self) -> dict[str, int]:
        counts = {"rows": len(self.rows), "create": 0, "update": 0, "skip": 0, "errors": 0}
        for row in self.rows:
            counts[row.action] += 1
            counts["errors"] += bool(row.errors)
        return counts


def _unguard(value: str) -> str:
    """Take off the ' that export puts in front of a formula-like cell."""
    if len(value) > 1 and value[0] == "'" and value[1] in (*FORMULA_STARTS, "'"):
        return value[1:]
    return value


def _guard(value: str) -> str:
    return "'" + value if value.startswith((*FORMULA_STARTS, "'")) else value


def _records(text: str) -> tuple[list[str], list[tuple[int, list[str]]]]:
    if len(text.encode("utf-8", "surrogatepass")) > MAX_CSV_BYTES:
        raise CsvInvalid(f"A CSV file may be at most {MAX_CSV_BYTES // (1024 * 1024)} MB.")
    reader = csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""), strict=True)
    records = []
    try:
        for number, cells in enumerate(reader, start=1):
            if any(cell.strip() for cell in cells):
                records.append((number, cells))
            if len(records) > MAX_CSV_ROWS + 1:
                raise CsvInvalid(f"A CSV file may hold at most {MAX_CSV_ROWS} rows besides the header.")
    except csv.Error as exc:
        raise CsvInvalid(f"Not a readable CSV file (line {reader.line_num}): {exc}.") from exc
    if not records:
        raise CsvInvalid("The file is empty: it needs a header row (email,name,phone,company,notes,group).")
    header = [cell.strip().lower() for cell in records[0][1]]
    if "email" not in header:
        raise CsvInvalid("The header row has no email column (columns: " + ",".join(COLUMNS) + ").")
    repeated = sorted({name for name in header if name in COLUMNS and header.count(name) > 1})
    if repeated:
        raise CsvInvalid(f"The header row names {', '.join(repeated)} more than once.")
    return header, records[1:]


def _clean(header: list[str], number: int, cells: list[str]) -> CsvRow:
    row = CsvRow(row=number)
    if len(cells) > len(header):
        row.errors.append(f"{len(cells)} cells but the header has {len(header)} columns.")
    for name, cell in zip(header, cells, strict=False):
        if name not in COLUMNS:
            continue
        value = _unguard(cell) if name == "notes" else _unguard(cell.strip()).strip()
        if len(value) > MAX_LENGTHS[name]:
            row.errors.append(f"{name}: at most {MAX_LENGTHS[name]} characters.")
            value = value[:MAX_LENGTHS[name]]
        setattr(row, name, value)
    row.email = row.email.lower()
    if not row.email:
        row.errors.append("email: required.")
    else:
        try:
            validate_email(row.email)
            valid = not _UNSAFE_ADDRESS & set(row.email)
        except ValidationError:
            valid = False
        if not valid:
            row.errors.append(f"email: {row.email!r} is not a valid address.")
    return row


def _plan(book: AddressBook, text: str) -> tuple[CsvReport, dict[str, Contact]]:
    """What each row would do, against the book as it is now (no writes)."""
    header, records = _records(text)
    known = [name for name in header if name in COLUMNS]
    unknown = [name for name in header if name not in COLUMNS]
    rows = [_clean(header, number, cells) for number, cells in records]
    emails = {row.email for row in rows if row.email}
    existing: dict[str, Contact] = {}
    for contact in (Contact.objects.filter(book=book).alias(address=Lower("email")).filter(address__in=emails)
                    .order_by("pk")
                    .prefetch_related("groups")):
        existing.setdefault(contact.email.lower(), contact)
    seen: dict[str, int] = {}
    for row in rows:
        if row.errors:
            continue
        if row.email in seen:
            row.errors.append(f"email: {row.email} is on row {seen[row.email]} already.")
            continue
        seen[row.email] = row.row
        contact = existing.get(row.email)
        if contact is None:
            row.action = "create"
            continue
        row.contact_id = contact.pk
        changes = _changes(contact, row)
        in_group = not row.group or row.group in {group.name for group in contact.groups.all()}
        row.action = "update" if changes or not in_group else "skip"
    return CsvReport(rows=rows, columns=known, unknown_columns=unknown), existing


def _changes(contact: Contact, row: CsvRow) -> dict[str, str]:
    return {name: getattr(row, name) for name in ("name", "phone", "company", "notes")
            if getattr(row, name) and getattr(row, name) != getattr(contact, name)}


def contacts_csv_preview(*, book: AddressBook, text: str) -> CsvReport:
    """What importing `text` into `book` would do, row by row; changes nothing. CsvInvalid for an unreadable file."""
    report, _ = _plan(book, text)
    return report


def contacts_csv_apply_row(*, book: AddressBook, row: CsvRow) -> bool:
    """Apply one planned row to the book as it is now: update the contact with that address (non-empty
    cells replace fields, the group is added) or create one. True when it made a contact; applying the
    same row again changes nothing (a background import may meet a row twice only through this rule)."""
    contact = (Contact.objects.filter(book=book).alias(address=Lower("email")).filter(address=row.email)
               .order_by("pk").prefetch_related("groups").first())
    if contact is None:
        contact = contact_create(book=book, name=row.name, email=row.email, phone=row.phone,
                                 company=row.company, notes=row.notes, groups=[row.group] if row.group else [])
        row.contact_id = contact.pk
        return True
    names = [group.name for group in contact.groups.all()]
    wanted = names + [row.group] if row.group and row.group not in names else None
    changes = _changes(contact, row)
    if changes or wanted is not None:
        contact_update(contact=contact, groups=wanted, **changes)
    row.contact_id = contact.pk
    return False


@transaction.atomic
def contacts_csv_import(*, book: AddressBook, text: str) -> CsvReport:
    """Apply the valid rows of `text` to `book` (in one transaction) and report each row as the preview would."""
    report, _ = _plan(book, text)
    for row in report.rows:
        if row.action != "skip":
            contacts_csv_apply_row(book=book, row=row)
    report.applied = True
    return report


def contacts_csv_export(*, contacts) -> str:
    """These contacts as CSV with the COLUMNS header (group: the first group by name), formula-like cells guarded."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    for contact in contacts:
        first = min((group.name for group in contact.groups.all()), default="")
        writer.writerow([_guard(value) for value in (contact.email, contact.name, contact.phone, contact.company,
                                                     contact.notes, first)])
    return out.getvalue()
