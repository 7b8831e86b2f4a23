"""The owner's quarantine: the messages held for the mailbox, with the reasons, released (once, to
the Inbox, optionally allowing the sender) or deleted; and the digest's signed one-click release
link, which works without signing in and only once."""
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from mailcore.errors import DomainError
from portal.quarantine_buttons import press
from portal.webmail.access import owner_required
from portal.webmail.mail_list import _frame
from protection.digest import LinkInvalid, digest_link_item
from protection.models import Quarantined
from protection.quarantine import QuarantineGone, quarantine_expires_at, quarantine_release
from protection.selectors import mailbox_quarantine, mailbox_quarantined_get


@require_http_methods(["GET"])
@owner_required
def quarantine_list(request, mailbox):
    items = list(mailbox_quarantine(mailbox=mailbox)[:200])
    rows = [{"item": item, "expires_at": quarantine_expires_at(item)} for item in items]
    return render(request, "webmail/quarantine.html", {**_frame(request, ""), "rows": rows})


@require_POST
@owner_required
def quarantine_act(request, mailbox, public_id: str):
    try:
        item = mailbox_quarantined_get(mailbox=mailbox, public_id=public_id)
    except Quarantined.DoesNotExist:
        raise Http404("No such message.") from None
    press(request, item, by=f"owner {mailbox.address}", where="your", allowed_for="now on your allow list")
    return redirect("webmail:quarantine")


@require_http_methods(["GET", "POST"])
def quarantine_link_release(request, token: str):
    """The digest's link: GET shows what it releases and a button (mail scanners that follow links
    must not release anything); POST releases it, once."""
    try:
        item = digest_link_item(token)
    except LinkInvalid as exc:
        return render(request, "webmail/quarantine_link.html", {"problem": str(exc)}, status=400)
    context = {"item": item, "token": token}
    if request.method == "POST":
        try:
            quarantine_release(item=item, by=f"digest {item.mailbox.address}")
        except QuarantineGone:
            context["problem"] = "This message was already released or deleted; the link works only once."
            return render(request, "webmail/quarantine_link.html", context, status=409)
        except DomainError as exc:
            context["problem"] = f"The message could not be delivered just now ({exc.detail}). Try again later."
            return render(request, "webmail/quarantine_link.html", context, status=502)
        context["released"] = True
        return render(request, "webmail/quarantine_link.html", context)
    if not item.is_waiting:
        context["problem"] = "This message was already released or deleted; the link works only once."
        return render(request, "webmail/quarantine_link.html", context, status=409)
    return render(request, "webmail/quarantine_link.html", context)
