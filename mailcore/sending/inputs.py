"""What a send asks for, typed: the one input every sender builds (POST /mail/send, the agent tool,
webmail compose, campaign steps) and mail_send checks, in one place."""
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime


# Fields only our own code sets (invitations, campaigns): never read from an interface's input.
INTERNAL_FIELDS = frozenset({"calendar", "headers", "verp", "written_in_webmail"})


@dataclass(frozen=True)
class AttachmentRequest:
    filename: str
    content_base64: str
    content_type: str = "application/octet-stream"


@dataclass(frozen=True)
class SendRequest:
    from_email: str
    to: list[str]
    cc: list[str] = field(default_factory=list)
    bcc: list[str] = field(default_factory=list)
    subject: str | None = None  # None: the template's subject, when template_id is given
    body_html: str = ""
    body_text: str = ""
    template_id: int | None = None
    variables: dict = field(default_factory=dict)
    reply_to: str = ""
    track_opens: bool = False
    scheduled_at: datetime | None = None
    unsend_window: int | None = None
    attachments: list[AttachmentRequest] = field(default_factory=list)
    sandbox: bool = False
    # Threading (RFC 5322 3.6.4): the Message-ID replied to, and the conversation's chain of ids.
    # Webmail compose sets them; the REST and MCP inputs do not take them.
    in_reply_to: str = ""
    references: str = ""
    # An iMIP calendar part (RFC 6047): (method, iCalendar text), written as a text/calendar
    # alternative and an invite.ics copy. Calendar invitations set it; no interface's input takes it.
    calendar: tuple[str, str] | None = None
    # Bulk mail (campaign deliveries): extra headers from BULK_HEADERS (List-Unsubscribe, ...) and a
    # signed return path (VERP) as the envelope sender. Campaigns set them; no interface's input takes them.
    headers: tuple[tuple[str, str], ...] = ()
    verp: bool = False
    # Written by the owner in the webmail (drafts.draft_send): a failure comes back to them as a
    # notice, a draft and a bounce (mailcore.sending.failures). No interface's input takes it.
    written_in_webmail: bool = False

    @classmethod
    def from_data(cls, data: Mapping) -> "SendRequest":
        """From an interface's parsed input (names as the spec's fields; absent ones take defaults)."""
        known = {f.name for f in fields(cls)}
        values = {name: value for name, value in data.items()
                  if name in known and name not in INTERNAL_FIELDS and value is not None}
        values["attachments"] = [AttachmentRequest(**dict(a)) for a in data.get("attachments") or []]
        return cls(**values)
