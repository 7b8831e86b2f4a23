"""addressbook-query (RFC 6352 8.6): the contacts whose vCard properties pass the prop-filters, up to nresults."""
from xml.etree import ElementTree as ET

from django.http import HttpResponse

from dav.davxml import Multistatus, card
from dav.properties import Representation, add_response, report_requested
from dav.reports.textmatch import text_matches
from dav.responses import xml_response
from dav.tree import Node, children_of
from contacts import vcard


def _card_value(prop) -> str:
    value = prop.value
    if isinstance(value, list):
        return ",".join(str(part) for part in value)
    return str(value)


def _card_prop_matches(found: list, prop_filter: ET.Element, namespace) -> bool:
    if prop_filter.find(namespace("is-not-defined")) is not None:
        return not found
    if not found:
        return False
    tests = prop_filter.findall(namespace("text-match"))
    if not tests:
        return True
    results = [any(text_matches(_card_value(prop), test) for prop in found) for test in tests]
    return all(results) if prop_filter.get("test", "anyof") == "allof" else any(results)


def addressbook_query(request, node: Node, root: ET.Element, representation: Representation | None) -> HttpResponse:
    mode, names = report_requested(root)
    filter_element = root.find(card("filter"))
    prop_filters = filter_element.findall(card("prop-filter")) if filter_element is not None else []
    all_of = filter_element is not None and filter_element.get("test", "anyof") == "allof"
    limit_element = root.find(f"{card('limit')}/{card('nresults')}")
    limit = int(limit_element.text) if limit_element is not None and (limit_element.text or "").isdigit() else None
    multistatus = Multistatus()
    count = 0
    for member in children_of(node):
        if prop_filters:
            try:
                parsed = vcard.parse_one(member.obj.vcard)
            except vcard.VCardError:
                continue
            results = [_card_prop_matches(parsed.contents.get(pf.get("name", "").lower(), []), pf, card)
                       for pf in prop_filters]
            if not (all(results) if all_of else any(results)):
                continue
        if limit is not None and count >= limit:
            multistatus.add(node.href, status="507 Insufficient Storage")
            break
        add_response(multistatus, request, member, mode, names, representation)
        count += 1
    return xml_response(multistatus.to_bytes())
