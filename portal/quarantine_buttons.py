"""What the owner's and the partner's quarantine pages do with a pressed button: the action
(protection.quarantine_act) and the one-line message the page shows after it."""
from django.contrib import messages
from django.http import Http404

from mailcore.errors import DomainError
from protection.models import Quarantined
from protection.quarantine import ACTIONS, QuarantineGone, quarantine_act


def press(request, item: Quarantined, *, by: str, where: str, allowed_for: str) -> None:
    """Act on `item` as the POST's `action` says and tell the person what happened. `where` names
    whose Inbox it went to; `allowed_for` ends the sentence about an allowed sender."""
    action = request.POST.get("action")
    if action not in ACTIONS:
        raise Http404("No such action.")
    subject = item.subject or "(no subject)"
    try:
        released = quarantine_act(item=item, action=action, by=by)
    except QuarantineGone as exc:
        messages.info(request, str(exc))
    except DomainError as exc:
        messages.error(request, f"Not released: {exc.detail}")
    else:
        if released is None:
            messages.success(request, f"“{subject}” deleted.")
        else:
            note = f" {released.allowed.sender} is {allowed_for}." if released.allowed else ""
            messages.success(request, f"“{subject}” is in {where} Inbox.{note}")
