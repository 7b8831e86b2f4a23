"""Reading one message in the webmail: the page (always a full page load, never an htmx swap), its
attachments and original source as downloads that cannot run in our origin, the reader's consent
to remote images, and what can be done to the message (unread, star, archive, move, delete, spam, not spam).

The HTML body is only ever the srcdoc of `<iframe sandbox="allow-popups
allow-popups-to-escape-sandbox">`: no scripts, no same origin, no forms, no top navigation; a
link opens in a new, normal tab (target=_blank, rel=noopener noreferrer). The page's CSP allows
images from 'self' and data: only, widened to https: on a page whose images the reader allowed;
the frame's own CSP says the same per message (mailcore.inbox.display)."""
from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.csp import CSP
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from calendars.imip import invitation_card
from calendars.responses import invitation_cancel_apply, invitation_reply_record, invitation_respond
from mailcore.errors import DomainError, InvalidFields
from mailcore.inbox.display import message_source
from mailcore.inbox.downloads import download_headers, download_type
from mailcore.inbox.services import inbox_attachment, message_delete, message_update
from mailcore.store.base import MessageNotFound, StoreUnavailable
from protection.authentication import message_authentication
from protection.learning import learning_outcome, messages_mark_not_spam, messages_mark_spam
from protection.reasons import junk_explanation
from webmail.reading import message_images_always, message_open
from portal.webmail.access import owner_required
from portal.webmail.frame import webmail_frame

# The frame's sandbox: links may open a new tab that is a normal browsing context (so the site
# the reader goes to works); nothing else (no scripts, same origin, forms, modals, top navigation).
FRAME_SANDBOX = "allow-popups allow-popups-to-escape-sandbox"



def page_policy(*, remote_images: bool) -> dict:
    """The message page's CSP: the site's, with https: images only where the reader allowed them."""
    if not remote_images:
        return settings.SECURE_CSP
    return {**settings.SECURE_CSP, "img-src": [CSP.SELF, "data:", "https:"]}


def _unavailable(request, mailbox, name: str, exc: DomainError):
    return render(request, "webmail/message.html", {"mailbox": mailbox, "folder": name, "shown": None,
                                                    "problem": exc.detail}, status=503)


@never_cache
@require_GET
@owner_required
def message(request, mailbox, name: str, uid: int):
    """The message, marked seen. `?images=once` shows its remote images in this view only."""
    images_once = request.GET.get("images") == "once"
    try:
        shown = message_open(mailbox=mailbox, folder=name, uid=uid, images_once=images_once)
    except StoreUnavailable as exc:
        return _unavailable(request, mailbox, name, exc)
    except DomainError as exc:
        raise Http404("No such message.") from exc
    frame = webmail_frame(request)
    in_junk = _folder_with_use(frame, "\\Junk") == shown.folder
    response = render(request, "webmail/message.html", {
        "mailbox": mailbox, "folder": name, "shown": shown, "frame_sandbox": FRAME_SANDBOX,
        "move_targets": [found.name for found in frame.folders if found.name != shown.folder],
        "in_trash": _folder_with_use(frame, "\\Trash") in (None, shown.folder),
        "archive": _folder_with_use(frame, "\\Archive") not in (None, shown.folder),
        "in_junk": in_junk,
        "junk": junk_explanation(shown.found.message.headers) if in_junk else None,
        "invitation": _invitation_card(mailbox, shown),
        "authentication": message_authentication(shown.found.message.headers),
    })
    response._csp_config = page_policy(remote_images=shown.remote_images_shown)
    return response


def _download(payload: bytes, *, filename: str, content_type: str) -> HttpResponse:
    return HttpResponse(payload, headers=download_headers(filename, content_type))


@require_GET
@owner_required
def attachment(request, mailbox, name: str, uid: int, index: int):
    try:
        found, payload = inbox_attachment(mailbox=mailbox, folder=name, uid=uid, index=index)
    except StoreUnavailable as exc:
        return _unavailable(request, mailbox, name, exc)
    except DomainError as exc:
        raise Http404("No such attachment.") from exc
    return _download(payload, filename=found.filename, content_type=download_type(found.content_type))


@require_GET
@owner_required
def original(request, mailbox, name: str, uid: int):
    """The message as it arrived, as a .eml download."""
    try:
        raw = message_source(mailbox=mailbox, folder=name, uid=uid)
    except StoreUnavailable as exc:
        return _unavailable(request, mailbox, name, exc)
    except DomainError as exc:
        raise Http404("No such message.") from exc
    return _download(raw, filename=f"message-{uid}.eml", content_type="application/octet-stream")


def _folder_with_use(frame, special_use: str) -> str | None:
    return next((found.name for found in frame.folders if found.special_use == special_use), None)


class MessageActionForm(forms.Form):
    ACTIONS = [("read", "Mark as read"), ("unread", "Mark as unread"), ("star", "Star"), ("unstar", "Remove star"),
               ("archive", "Archive"), ("move", "Move"), ("delete", "Delete"), ("spam", "Spam"),
               ("not_spam", "Not spam")]
    action = forms.ChoiceField(choices=ACTIONS)
    target = forms.CharField(required=False, max_length=255)
    confirm = forms.CharField(required=False, max_length=3)

    def __init__(self, data, *, folders: set[str], **kwargs):
        super().__init__(data, **kwargs)
        self.folders = folders

    def clean(self):
        data = super().clean()
        if data.get("action") == "move" and data.get("target") not in self.folders:
            self.add_error("target", "Choose the folder to move the message to.")
        return data


@require_POST
@owner_required
def message_action(request, mailbox, name: str, uid: int):
    """Mark read or unread, star, archive, move, delete (to Trash; from Trash, for good after a
    confirmation). Back to the folder when the message left it or was marked unread."""
    frame = webmail_frame(request)
    folders = {found.name for found in frame.folders}
    if folders and name not in folders:
        raise Http404(f"No folder {name}.")
    back_to_message = reverse("webmail:message", args=[name, uid])
    back_to_folder = reverse("webmail:folder", args=[name])
    form = MessageActionForm(request.POST, folders=folders)
    if not form.is_valid():
        messages.error(request, "Nothing was changed: " + " ".join(e for errors in form.errors.values() for e in errors))
        return redirect(back_to_message)
    action, target = form.cleaned_data["action"], form.cleaned_data["target"]
    trash, archive = _folder_with_use(frame, "\\Trash"), _folder_with_use(frame, "\\Archive")
    try:
        if action in {"spam", "not_spam"}:
            mark = messages_mark_spam if action == "spam" else messages_mark_not_spam
            learned = mark(mailbox=mailbox, folder=name, uids=[uid])
            if not learned.count:
                raise MessageNotFound(f"message {uid} not found in {name}")
            messages.success(request, learning_outcome(learned, spam=action == "spam"))
            return redirect(back_to_folder)
        if action in {"read", "unread"}:
            message_update(mailbox=mailbox, folder=name, uid=uid, seen=action == "read")
            messages.success(request, f"Marked as {action}.")
            return redirect(back_to_folder if action == "unread" else back_to_message)
        if action in {"star", "unstar"}:
            message_update(mailbox=mailbox, folder=name, uid=uid, starred=action == "star")
            messages.success(request, "Starred." if action == "star" else "Star removed.")
            return redirect(back_to_message)
        if action == "archive":
            if archive is None or archive == name:
                messages.error(request, "Nothing was changed: there is no other Archive folder to move it to.")
                return redirect(back_to_message)
            target = archive
        if action == "delete":
            if trash is not None and trash != name:
                target = trash
            elif form.cleaned_data["confirm"] != "yes":
                return render(request, "webmail/message_delete.html", {"mailbox": mailbox, "folder": name, "uid": uid})
            else:
                message_delete(mailbox=mailbox, folder=name, uid=uid)
                messages.success(request, "The message was deleted for good.")
                return redirect(back_to_folder)
        if target == name:
            messages.error(request, f"Nothing was changed: the message is already in {name}.")
            return redirect(back_to_message)
        message_update(mailbox=mailbox, folder=name, uid=uid, move_to=target)
        messages.success(request, f"Moved to {target}.")
        return redirect(back_to_folder)
    except StoreUnavailable as exc:
        return _unavailable(request, mailbox, name, exc)
    except DomainError as exc:
        raise Http404("No such message.") from exc


@require_POST
@owner_required
def message_images(request, mailbox, name: str, uid: int):
    """Always show remote images from this message's sender (`choice=always`), or ask again
    (`choice=revoke`). Showing them once is a plain link: `?images=once` on the message."""
    choice = request.POST.get("choice", "")
    try:
        sender = message_images_always(mailbox=mailbox, folder=name, uid=uid, choice=choice)
    except StoreUnavailable as exc:
        return _unavailable(request, mailbox, name, exc)
    except InvalidFields as exc:
        messages.error(request, "Nothing was changed: " + " ".join(exc.messages))
        return redirect("webmail:message", name, uid)
    except DomainError as exc:
        raise Http404("No such message.") from exc
    if choice == "always":
        messages.success(request, f"Images from {sender} are now always shown.")
    else:
        messages.success(request, f"You will be asked again before images from {sender} are shown.")
    return redirect("webmail:message", name, uid)


def _invitation_card(mailbox, shown):
    """The invitation card of a message that may carry a calendar part (multipart or text/calendar)."""
    content_type = shown.message.content_type
    if not (content_type.startswith("multipart/") or content_type == "text/calendar"):
        return None
    try:
        return invitation_card(mailbox=mailbox, folder=shown.folder, uid=shown.uid)
    except StoreUnavailable:  # the message itself was read: show it without the card
        return None


INVITATION_ANSWERS = {"accept": "ACCEPTED", "tentative": "TENTATIVE", "decline": "DECLINED"}
INVITATION_DONE = {"ACCEPTED": "Accepted: the event is in your calendar and {organizer} was told.",
                   "TENTATIVE": "Tentatively accepted: the event is in your calendar and {organizer} was told.",
                   "DECLINED": "Declined: {organizer} was told and the event is not in your calendar."}


@require_POST
@owner_required
def message_invitation(request, mailbox, name: str, uid: int):
    """Answer the invitation a message carries (accept, tentative, decline), remove a cancelled event,
    or record an attendee's reply. The calendar data is read from the owner's own message."""
    answer = request.POST.get("answer", "")
    back = redirect("webmail:message", name, uid)
    try:
        card = invitation_card(mailbox=mailbox, folder=name, uid=uid)
        if card is None:
            raise Http404("This message carries no invitation.")
        text = card.invitation.text
        if answer in INVITATION_ANSWERS:
            partstat = INVITATION_ANSWERS[answer]
            invitation_respond(mailbox=mailbox, ical_text=text, partstat=partstat)
            messages.success(request, INVITATION_DONE[partstat].format(organizer=card.invitation.organizer))
        elif answer == "remove":
            removed = invitation_cancel_apply(mailbox=mailbox, ical_text=text)
            messages.success(request, "The event was removed from your calendar." if removed
                             else "The event was not in your calendar.")
        elif answer == "record":
            invitation_reply_record(mailbox=mailbox, ical_text=text)
            messages.success(request, "Your calendar now shows their answer.")
        else:
            messages.error(request, "Nothing was changed: choose accept, tentative or decline.")
    except StoreUnavailable as exc:
        return _unavailable(request, mailbox, name, exc)
    except InvalidFields as exc:
        messages.error(request, "Nothing was changed: the answer could not be sent (" + " ".join(exc.messages) + ").")
    except DomainError as exc:  # not on the list, a later version stored, quota, a locked mailbox
        messages.error(request, f"Nothing was changed: {exc.detail}")
    return back
