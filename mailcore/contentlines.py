"""The front of every calendar and address book import: one linear pass over an .ics or .vcf file's
content lines (RFC 5545 3.1, RFC 6350 3.2) that unfolds them, checks that components nest properly
and not deeper than a small bound, and cuts out each top-level item (a VEVENT, a VCARD) as text of
its own, so the full parsers (icalendar, vobject) only ever see one small item. A file nested a
thousand deep, or holding more items than an import takes, is refused before any parser runs."""
from dataclasses import dataclass, field


class ContentLinesError(ValueError):
    pass


@dataclass
class Item:
    """One top-level component: its name, its unfolded lines from BEGIN to END, its UID ("" if none)."""

    name: str
    lines: list[str] = field(default_factory=list)
    uid: str = ""

    @property
    def text(self) -> str:
        return "".join(folded(line) for line in self.lines)


def folded(line: str) -> str:
    """One logical line folded at 75 octets (RFC 5545 3.1), never inside a UTF-8 character, with its CRLF."""
    if len(line) <= 75 and line.isascii():
        return line + "\r\n"
    parts, current, size = [], [], 0
    for char in line:
        width = len(char.encode("utf-8", "surrogatepass"))
        if size + width > (75 if not parts else 74):
            parts.append("".join(current))
            current, size = [], 0
        current.append(char)
        size += width
    parts.append("".join(current))
    return "\r\n ".join(parts) + "\r\n"


def unfolded(text: str) -> list[tuple[int, str]]:
    """The logical lines, each with the number of the line it starts on: a line that starts with a
    space or tab continues the one before; blank lines are dropped."""
    lines: list[tuple[int, list[str]]] = []  # parts joined once at the end: a long folded photo stays linear
    for number, raw in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), start=1):
        if raw[:1] in (" ", "\t") and lines:
            lines[-1][1].append(raw[1:])
        elif raw.strip():
            lines.append((number, [raw]))
    return [(number, "".join(parts)) for number, parts in lines]


def name_of(line: str) -> str:
    """The property name of a content line, without group or parameters, upper case (`item1.EMAIL;TYPE=x:` -> EMAIL)."""
    return line.split(":", 1)[0].split(";", 1)[0].rsplit(".", 1)[-1].strip().upper()


def value_of(line: str) -> str:
    """The value of a content line: what follows the first colon outside a quoted parameter value."""
    quoted = False
    for index, char in enumerate(line):
        if char == '"':
            quoted = not quoted
        elif char == ":" and not quoted:
            return line[index + 1:].strip()
    return ""


def items_of(text: str, *, container: str | None, limits: dict[str, tuple[int, str]], max_depth: int) -> list[Item]:
    """The top-level items whose names `limits` maps to (at most how many, what to call them in a
    message), inside `container` (e.g. VCALENDAR) when given, in file order. ContentLinesError when
    components are unbalanced, nest deeper than `max_depth`, a component holds another of its own
    kind, or a kind of item is more numerous than its limit."""
    item_depth = 2 if container else 1
    stack: list[str] = []
    found: list[Item] = []
    counts = dict.fromkeys(limits, 0)
    current: Item | None = None
    for number, line in unfolded(text):
        name = name_of(line)
        if name == "BEGIN":
            component = value_of(line).upper()
            if not component:
                raise ContentLinesError(f"Line {number}: BEGIN names no component.")
            if component in stack:
                raise ContentLinesError(f"Line {number}: a {component} inside another {component}; "
                                        "components may not hold one of their own kind.")
            stack.append(component)
            if len(stack) > max_depth:
                raise ContentLinesError(f"Line {number}: components nest {len(stack)} deep; "
                                        f"at most {max_depth} are allowed.")
            if len(stack) == 1 and container and component != container:
                raise ContentLinesError(f"Line {number}: expected BEGIN:{container}, found BEGIN:{component}.")
            if len(stack) == item_depth and component in limits:
                most, noun = limits[component]
                if counts[component] >= most:
                    raise ContentLinesError(f"The file holds more than {most} {noun}; "
                                            f"at most {most} can be imported at once.")
                counts[component] += 1
                current = Item(name=component)
                found.append(current)
        elif name == "END":
            component = value_of(line).upper()
            if not stack or stack[-1] != component:
                expected = f"END:{stack[-1]}" if stack else "BEGIN"
                raise ContentLinesError(f"Line {number}: END:{component} where {expected} was expected.")
            if current is not None:
                current.lines.append(line)
                if len(stack) == item_depth:
                    current = None
            stack.pop()
            continue
        elif not stack:
            raise ContentLinesError(f"Line {number}: content outside any component.")
        if current is not None:
            current.lines.append(line)
            if name == "UID" and len(stack) == item_depth and not current.uid:
                current.uid = value_of(line)
    if stack:
        raise ContentLinesError(f"The file ends inside {stack[-1]} (END:{stack[-1]} is missing).")
    return found

