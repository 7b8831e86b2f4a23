"""Writes for mailboxes."""

from mailcore.accounts.models import Plan
from mailcore.domains.models import Domain
from mailcore.domains.report_addresses import is_report_local_part
from mailcore.errors import InvalidFields
from mailcore.mailboxes.models import Mailbox
from mailcore.mailboxes.passwords import mailbox_password_hash


def mailbox_create(
    *, domain: Domain, local_part: str, password: str, display_name: str = "", plan: Plan | None = None
) -> Mailbox:
    local_part = local_part.lower()
    if is_report_local_part(local_part):
        raise InvalidFields({"local_part": [f"{local_part}@ receives the domain's DMARC and TLS reports"]})
    return Mailbox.objects.create(
        account=domain.account,
        domain=domain,
        local_part=local_part,
        address=f"{local_part}@{domain.name}",
        display_name=display_name,
        password_hash=mailbox_password_hash(password),
        plan=plan,
    )


def mailbox_set_password(*, mailbox: Mailbox, password: str) -> Mailbox:
    mailbox.password_hash = mailbox_password_hash(password)
    mailbox.save(update_fields=["password_hash"])
    return mailbox


def mailbox_set_identity(*, mailbox: Mailbox, display_name: str | None = None, signature_html: str | None = None) -> Mailbox:
    """The name and HTML signature outgoing mail carries; the signature is sanitized like mail."""
    from mailcore.sanitize import sanitize_mail_html

    if display_name is not None:
        if any(ord(char) < 32 or ord(char) == 127 for char in display_name):
            raise InvalidFields({"display_name": ["display_name must not contain line breaks or control characters"]})
        mailbox.display_name = display_name.strip()
    if signature_html is not None:
        mailbox.signature_html = sanitize_mail_html(signature_html, allow_remote_images=True).html
    mailbox.save(update_fields=["display_name", "signature_html"])
    return mailbox
