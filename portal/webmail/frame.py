"""What every webmail page's frame shows (folders with unread counts, the mailbox's labels, and for
an operator which scanners are on), read at most once per request and only when a template asks:
the `webmail` template variable."""
from functools import cached_property

from django.conf import settings

from mailcore.errors import DomainError
from mailcore.inbox.services import inbox_folders, inbox_folders_started
from mailcore.mailboxes.selectors import labels_for_mailbox
from mailcore.sending.failures import failure_summary, send_failures_open
from mailcore.store.base import Folder
from portal.webmail.access import webmail_session
from protection.scanner_status import scanner_state


class WebmailFrame:
    def __init__(self, mailbox, request=None):
        self.mailbox = mailbox
        self.request = request
        self._folders_started = None

    @cached_property
    def operator_scanners(self) -> str:
        """For the operator only (signed in as staff on this host, or anyone on a development machine,
        where whoever ran `make run` is the operator): which scanners are on, in one sentence."""
        user = getattr(self.request, "user", None)
        operator = user is not None and user.is_authenticated and user.is_staff
        if settings.PRODUCTION and not operator:
            return ""
        return scanner_state().summary

    def start_folders(self) -> None:
        """Begin reading the folders beside the page's own mail server work; `folders` waits for them."""
        if "folders" not in self.__dict__ and self._folders_started is None:
            self._folders_started = inbox_folders_started(mailbox=self.mailbox)

    @cached_property
    def folders(self) -> list[Folder]:
        """Empty when the mail server cannot be reached: the page still renders and says so itself."""
        try:
            if self._folders_started is not None:
                return self._folders_started()
            return inbox_folders(mailbox=self.mailbox)
        except DomainError:
            return []

    @cached_property
    def labels(self) -> list:
        return list(labels_for_mailbox(mailbox=self.mailbox))

    @cached_property
    def send_failures(self) -> list[dict]:
        """Sends that failed after their page was left, until the owner resends or dismisses them."""
        return [{"id": failure.pk, "summary": failure_summary(failure), "draft_uid": failure.draft_uid,
                 "scheduled_id": failure.message_id, "delivered_to_none": failure.delivered_to_none}
                for failure in send_failures_open(mailbox=self.mailbox)]

    @cached_property
    def folder_names(self) -> set[str]:
        return {folder.name for folder in self.folders}


def webmail_frame(request) -> WebmailFrame | None:
    """The signed-in mailbox's frame, cached on the request; None outside a webmail session."""
    if not hasattr(request, "_webmail_frame"):
        session = webmail_session(request)
        request._webmail_frame = WebmailFrame(session.mailbox, request) if session is not None else None
    return request._webmail_frame


def webmail(request) -> dict:
    """Template context processor: `webmail`, the frame of the signed-in mailbox. A callable, so
    nothing (not even the session) is read unless a template uses it."""
    return {"webmail": lambda: webmail_frame(request)}
