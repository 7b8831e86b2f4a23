"""text-match, which addressbook-query (RFC 6352 10.5.4) and calendar-query (RFC 4791 9.7.5) share."""
from xml.etree import ElementTree as ET


def text_matches(value: str, match: ET.Element, default_collation: str = "i;unicode-casemap") -> bool:
    wanted = match.text or ""
    collation = match.get("collation", default_collation)
    if collation != "i;octet":
        value, wanted = value.casefold(), wanted.casefold()
    kind = match.get("match-type", "contains")
    result = {"equals": value == wanted, "starts-with": value.startswith(wanted),
              "ends-with": value.endswith(wanted)}.get(kind, wanted in value)
    return not result if match.get("negate-condition") == "yes" else result
