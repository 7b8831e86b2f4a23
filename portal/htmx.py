"""Rendering HTMX answers: one region swapped in place, others and the flash messages out of band."""
from django.http import HttpResponse
from django.template.loader import render_to_string


def regions(request, template: str, names: list[str], context: dict) -> HttpResponse:
    """The first region swaps its hx-target; the others, and the flash messages, go out of band."""
    html = render_to_string(f"{template}#{names[0]}", context, request).strip()
    oob = [render_to_string(f"{template}#{name}", {**context, "oob": True}, request).strip() for name in names[1:]]
    oob.append(render_to_string("components/messages.html", {"oob": True}, request).strip())
    # Each out-of-band part in a <template>, so it parses whatever the main region is (a <tbody> too).
    return HttpResponse(html + "".join(f"<template>{part}</template>" for part in oob))
