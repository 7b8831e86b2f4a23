"""vCard text in and out (vobject): build a vCard 4 for a contact made here, lift the fields we
show out of any vCard a client sends (3.0 or 4.0), and change only those fields in a stored
vCard, so a phone's photo, addresses and extra numbers survive an edit made in webmail or REST."""
import hashlib
import uuid
from dataclasses import dataclass, field

import vobject

from mailcore import contentlines

MAX_VCARD_BYTES = 1_000_000  # a contact with a photo; a whole address book goes through import


class VCardError(ValueError):
    pass


@dataclass
class CardFields:
    uid: str = ""
    name: str = ""
    email: str = ""
    phone: str = ""
    company: str = ""
    notes: str = ""
    groups: list[str] = field(default_factory=list)


def new_uid() -> str:
    return str(uuid.uuid4())


def _first(card, name: str):
    found = card.contents.get(name)
    return found[0] if found else None


def _text(value) -> str:
    if isinstance(value, list):
        value = " ".join(str(part) for part in value if part)
    return str(value or "").strip()


def _name_of(card) -> str:
    formatted = _first(card, "fn")
    if formatted is not None and _text(formatted.value):
        return _text(formatted.value)
    structured = _first(card, "n")
    if structured is not None and isinstance(structured.value, vobject.vcard.Name):
        parts = [structured.value.prefix, structured.value.given, structured.value.additional,
                 structured.value.family, structured.value.suffix]
        return " ".join(_text(part) for part in parts if _text(part))
    return ""


def _preferred(card, name: str):
    """The PREF'd (vCard 4 PREF=1, vCard 3 TYPE=pref) property of that name, else the first."""
    found = card.contents.get(name, [])
    for prop in found:
        params = {key.upper(): [str(v).lower() for v in values] for key, values in prop.params.items()}
        if "1" in params.get("PREF", []) or "pref" in params.get("TYPE", []):
            return prop
    return found[0] if found else None


def parse_one(text: str):
    if len(text.encode()) > MAX_VCARD_BYTES:
        raise VCardError("A vCard may be at most 1 MB.")
    try:
        cards = list(vobject.readComponents(text, validate=False))
    except Exception as exc:  # vobject raises several kinds for broken text
        raise VCardError(f"Not a vCard: {exc}") from exc
    if len(cards) != 1 or cards[0].name.upper() != "VCARD":
        raise VCardError("Expected exactly one vCard.")
    return cards[0]


# A VCARD holds no component (nor, as everywhere, one of its own kind); the second level lets a file of
# another kind (a VCALENDAR) be told that it holds no vCards.
MAX_NESTING = 2


def split(text: str, *, max_cards: int) -> list[str]:
    """Every vCard of an import file as text of its own, in order, in one linear pass (contentlines):
    a file nested deeper than MAX_NESTING, or holding more than `max_cards`, is a VCardError before any
    card is parsed."""
    try:
        items = contentlines.items_of(text, container=None, max_depth=MAX_NESTING,
                                      limits={"VCARD": (max_cards, "vCards")})
    except contentlines.ContentLinesError as exc:
        raise VCardError(f"Not a vCard file: {exc}") from exc
    if not items:
        raise VCardError("The file holds no vCards.")
    return [item.text for item in items]


def uid_for(text: str) -> str:
    """A UID for an imported card that has none: the same for the same card, so importing twice updates."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "mailwell-import:" + hashlib.sha256(text.encode()).hexdigest()))


def fields_of(card) -> CardFields:
    email, phone = _preferred(card, "email"), _preferred(card, "tel")
    org, note, categories = _first(card, "org"), _first(card, "note"), card.contents.get("categories", [])
    groups: list[str] = []
    for prop in categories:
        values = prop.value if isinstance(prop.value, list) else str(prop.value).split(",")
        groups += [value.strip() for value in values if value and value.strip()]
    uid = _first(card, "uid")
    return CardFields(
        uid=_text(uid.value) if uid is not None else "",
        name=_name_of(card)[:255],
        email=_text(email.value).lower()[:320] if email is not None else "",
        phone=_text(phone.value)[:64] if phone is not None else "",
        company=_text(org.value)[:255] if org is not None else "",
        notes=_text(note.value) if note is not None else "",
        groups=list(dict.fromkeys(groups)),
    )


def _replace(card, name: str, value) -> None:
    """Set the preferred property of that name to `value` (keeping its parameters), or drop it when empty."""
    existing = _preferred(card, name)
    if not value:
        if existing is not None:
            card.remove(existing)
        return
    if existing is None:
        existing = card.add(name)
    existing.value = value


def build(fields: CardFields, *, base: str | None = None) -> str:
    """A vCard with these fields: a new vCard 4, or `base` (a stored vCard) with only our fields changed."""
    card = parse_one(base) if base else vobject.vCard()
    if not base:
        card.add("version").value = "4.0"
        card.add("uid").value = fields.uid or new_uid()
        card.add("prodid").value = "-//Mailwell//Contacts//EN"
    _replace(card, "fn", fields.name)
    given, _, family = fields.name.rpartition(" ") if " " in fields.name else (fields.name, "", "")
    structured = _first(card, "n")
    if structured is None:
        structured = card.add("n")
    structured.value = vobject.vcard.Name(family=family, given=given)
    _replace(card, "email", fields.email)
    _replace(card, "tel", fields.phone)
    _replace(card, "org", [fields.company] if fields.company else None)
    _replace(card, "note", fields.notes)
    for prop in list(card.contents.get("categories", [])):
        card.remove(prop)
    if fields.groups:
        card.add("categories").value = list(fields.groups)
    return card.serialize()
