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


# --- vCard 3.0 <-> 4.0 -------------------------------------------------------------------------
#
# A sync client asks for the version it reads (CardDAV address-data, or Accept on GET): iOS and
# macOS read 3.0, what webmail and REST write is 4.0. The stored text stays as it was written; the
# other version is made from it line by line, so every property we do not convert (and its
# parameters, groups and escaping) passes through unchanged.

VERSIONS = ("3.0", "4.0")
BINARY_PROPERTIES = ("PHOTO", "LOGO", "SOUND", "KEY")
RENAMED_IN_3 = {"KIND": "X-ADDRESSBOOKSERVER-KIND", "MEMBER": "X-ADDRESSBOOKSERVER-MEMBER",
                "ANNIVERSARY": "X-ANNIVERSARY", "GENDER": "X-GENDER"}
RENAMED_IN_4 = {old: new for new, old in RENAMED_IN_3.items()}
OMITTED_YEAR = "1604"  # Apple's stand-in year for a birthday without one (X-APPLE-OMIT-YEAR)


@dataclass
class _Line:
    group: str
    name: str
    params: list[tuple[str, list[str]]]  # in order; names upper-cased, values as written (unquoted)
    value: str

    def param(self, name: str) -> list[str]:
        return [value for key, values in self.params if key == name for value in values]

    def without(self, *names: str) -> None:
        self.params = [(key, values) for key, values in self.params if key not in names]

    def serialize(self) -> str:
        params = "".join(";" + key + ("=" + ",".join(_quoted(v) for v in values) if values else "")
                         for key, values in self.params)
        return f"{self.group + '.' if self.group else ''}{self.name}{params}:{self.value}"


def _quoted(value: str) -> str:
    return f'"{value}"' if any(char in value for char in ':;,') else value


def _split_unquoted(text: str, separator: str, limit: int = -1) -> list[str]:
    parts, current, quoted = [], [], False
    for char in text:
        if char == '"':
            quoted = not quoted
        if char == separator and not quoted and limit != 0:
            parts.append("".join(current))
            current = []
            limit -= 1
            continue
        current.append(char)
    parts.append("".join(current))
    return parts


def _parse_line(line: str) -> _Line | None:
    pieces = _split_unquoted(line, ":", 1)
    if len(pieces) != 2:
        return None
    head, value = pieces
    name_part, *param_parts = _split_unquoted(head, ";")
    group, _, name = name_part.rpartition(".")
    params = []
    for part in param_parts:
        key, equals, values = part.partition("=")
        if not equals:  # vCard 2.1 style bare type: TEL;WORK
            key, values = "TYPE", key
        params.append((key.strip().upper(), [item.strip().strip('"') for item in _split_unquoted(values, ",")]))
    return _Line(group, name.strip().upper(), params, value)


def _unfolded(text: str) -> list[str]:
    lines: list[str] = []
    for raw in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if raw[:1] in (" ", "\t") and lines:
            lines[-1] += raw[1:]
        elif raw:
            lines.append(raw)
    return lines


def _folded(line: str) -> str:
    """RFC 6350 3.2: lines of at most 75 octets, continued with a space (never inside a UTF-8 character)."""
    out, current = [], ""
    for char in line:
        if len((current + char).encode()) > (75 if not out else 74):
            out.append(current)
            current = ""
        current += char
    out.append(current)
    return "\r\n ".join(out)


def _types(line: _Line) -> list[str]:
    return [value for value in line.param("TYPE") for value in value.split(",") if value]


def _to_3(line: _Line) -> _Line | None:
    if line.name == "VERSION":
        line.value = "3.0"
    if line.name == "KIND" and line.value.lower() == "individual":
        return None  # the default
    line.name = RENAMED_IN_3.get(line.name, line.name)
    types = _types(line)
    preferences = line.param("PREF")
    if preferences:
        line.without("PREF")
        if preferences[0] == "1":
            types.append("pref")
    if line.name in BINARY_PROPERTIES:
        media_type = (line.param("MEDIATYPE") or [""])[0]
        line.without("MEDIATYPE", "VALUE")
        if line.value.startswith("data:") and ";base64," in line.value:
            header, _, data = line.value.partition(",")
            media_type = header[5:].split(";")[0] or media_type
            line.value = data
            line.params.append(("ENCODING", ["b"]))
        else:
            line.params.append(("VALUE", ["uri"]))
        if media_type:
            types.append(media_type.split("/")[-1].upper())
    elif line.name == "TEL" and line.value.lower().startswith("tel:"):
        line.value = line.value[4:]
        line.without("VALUE")
    elif line.name == "BDAY" and line.value.startswith("--") and len(line.value) >= 6:
        line.value = f"{OMITTED_YEAR}-{line.value[2:4]}-{line.value[4:6]}"
        line.params.append(("X-APPLE-OMIT-YEAR", [OMITTED_YEAR]))
    elif line.name in ("BDAY", "X-ANNIVERSARY") and len(line.value) == 8 and line.value.isdigit():
        line.value = f"{line.value[:4]}-{line.value[4:6]}-{line.value[6:]}"
    elif line.name == "GEO" and line.value.lower().startswith("geo:"):
        line.value = line.value[4:].replace(",", ";", 1)
    line.without("TYPE")
    if types:
        line.params.append(("TYPE", list(dict.fromkeys(types))))
    return line


def _to_4(line: _Line) -> _Line | None:
    if line.name == "VERSION":
        line.value = "4.0"
    line.name = RENAMED_IN_4.get(line.name, line.name)
    line.without("CHARSET")
    types = _types(line)
    if any(value.lower() == "pref" for value in types):
        types = [value for value in types if value.lower() != "pref"]
        line.params.append(("PREF", ["1"]))
    if line.name == "EMAIL":
        types = [value for value in types if value.lower() not in ("internet", "x400")]
    if line.name in BINARY_PROPERTIES:
        encoding = [value.lower() for value in line.param("ENCODING")]
        media_types = [value for value in types if value.lower() not in ("work", "home")]
        types = [value for value in types if value not in media_types]
        line.without("ENCODING", "VALUE")
        if encoding and encoding[0] in ("b", "base64"):
            kind = media_types[0].lower() if media_types else "jpeg"
            prefix = "" if "/" in kind else "image/" if line.name in ("PHOTO", "LOGO") else "audio/" \
                if line.name == "SOUND" else "application/"
            line.value = f"data:{prefix}{kind};base64,{line.value}"
        elif media_types:
            kind = media_types[0].lower()
            line.params.append(("MEDIATYPE", [kind if "/" in kind else f"image/{kind}"]))
    elif line.name == "BDAY" and line.param("X-APPLE-OMIT-YEAR"):
        digits = line.value.replace("-", "")
        line.value = f"--{digits[4:6]}{digits[6:8]}"
        line.without("X-APPLE-OMIT-YEAR")
    elif line.name in ("BDAY", "ANNIVERSARY") and len(line.value) >= 10 and line.value[4] == "-":
        line.value = line.value[:10].replace("-", "")
    elif line.name == "GEO" and ";" in line.value:
        line.value = "geo:" + line.value.replace(";", ",", 1)
    line.without("TYPE")
    if types:
        line.params.append(("TYPE", list(dict.fromkeys(value.lower() for value in types))))
    return line


def version_of(text: str) -> str:
    for raw in _unfolded(text):
        line = _parse_line(raw)
        if line is not None and line.name == "VERSION":
            return line.value.strip()
    return "3.0"


def as_version(text: str, version: str) -> str:
    """The vCard in that version (3.0 or 4.0): as stored when it is already, else converted."""
    if version not in VERSIONS:
        raise VCardError(f"Unknown vCard version {version!r}.")
    if version_of(text) == version:
        return text
    convert = _to_3 if version == "3.0" else _to_4
    out = []
    for raw in _unfolded(text):
        line = _parse_line(raw)
        if line is None:
            continue
        if line.name in ("BEGIN", "END"):
            out.append(raw)
            continue
        converted = convert(line)
        if converted is not None:
            out.append(_folded(converted.serialize()))
    return "\r\n".join(out) + "\r\n"
