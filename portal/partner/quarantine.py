"""The partner's quarantine page: messages held for its client mailboxes, across its clients
(filtered by client, mailbox or state), released (optionally allow-listing the sender) or deleted
through the services /v1/hosting/quarantine calls. Another partner's message is 404."""
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from mailcore.partners.selectors import partner_clients
from portal.partner.access import partner_section
from portal.quarantine_buttons import press
from protection.models import Quarantined
from protection.quarantine import quarantine_expires_at
from protection.selectors import STATES, WAITING, partner_quarantine, partner_quarantined_get

PAGE = 50


def _number(value) -> int | None:
    return int(value) if isinstance(value, str) and value.isdigit() else None


@require_GET
@partner_section
def quarantine(request, partner):
    client_id, mailbox_id = _number(request.GET.get("client")), _number(request.GET.get("mailbox"))
    state = request.GET.get("state") if request.GET.get("state") in STATES else WAITING
    rows = partner_quarantine(partner=partner, state=state, client_id=client_id, partner_mailbox_id=mailbox_id)
    page = Paginator(rows, PAGE).get_page(request.GET.get("page"))
    return render(request, "portal/quarantine.html", {
        "partner": partner, "page": page, "state": state, "states": STATES, "client_id": client_id,
        "mailbox_id": mailbox_id, "clients": list(partner_clients(partner=partner)),
        "rows": [{"item": item, "expires_at": quarantine_expires_at(item)} for item in page],
        "query": request.GET.urlencode(),
    })


@require_POST
@partner_section
def quarantine_act(request, partner, public_id: str):
    try:
        item = partner_quarantined_get(partner=partner, public_id=public_id)
    except Quarantined.DoesNotExist:
        raise Http404("No such message.") from None
    press(request, item, by=f"partner {request.user.email}", where=f"{item.mailbox.address}'s",
          allowed_for="allowed for that mailbox")
    back = request.POST.get("back", "")
    return redirect(f"{reverse('portal:quarantine')}?{back}" if back else reverse("portal:quarantine"))
