"""PROPFIND (RFC 4918 9.1) at depth 0 or 1: a resource's properties, and its members', as the plan allows."""
from django.http import HttpResponse

from dav.bodies import xml_body
from dav.davxml import Multistatus, d
from dav.properties import add_response, requested
from dav.responses import not_found, precondition, xml_response
from dav.tree import FEATURE, Node, children_of


def _allowed(node: Node) -> bool:
    return node.mailbox.effective_plan.has_feature(FEATURE[node.kind])


def propfind(request, node: Node) -> HttpResponse:
    depth = request.META.get("HTTP_DEPTH", "0").strip().lower()
    if depth not in ("0", "1"):
        return precondition(403, d("propfind-finite-depth"))
    root = xml_body(request)
    if isinstance(root, HttpResponse):
        return root
    if node.obj is None and not node.is_collection:
        return not_found()
    mode, names = requested(root)
    multistatus = Multistatus()
    nodes = [node] + (children_of(node) if depth == "1" else [])
    for each in nodes:
        if each.kind in FEATURE and not _allowed(each):
            continue
        add_response(multistatus, request, each, mode, names)
    return xml_response(multistatus.to_bytes())
