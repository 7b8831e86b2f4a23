"""Mailboxes at another provider, connected over IMAP (and its SMTP submission server) with the
owner's credentials, once the account has proved the address is its own.

A login to a server the caller names proves nothing about an address, so ownership is proved by a
code mailed to the address through the platform's own outbound path (the mailbox waits as a
ConnectionVerification until the code comes back), or at once when the address's domain is
verified by this account. No address of a domain hosted here by another account, and no hosted
mailbox's address, alias or subaddress, is ever connected: all of them get one and the same
refusal, which tells nothing about which addresses exist.

The servers are reached only at public addresses, pinned after DNS (mailcore.remotemail), within
CONNECTED_MAILBOX_CHECK_SECONDS, and at most CONNECTED_MAILBOX_CHECKS_PER_HOUR times an hour per
account; their answers are never repeated to the caller.
"""
import json
import logging
import secrets
import smtplib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.crypto import constant_time_compare, salted_hmac

from mailcore.accounts.models import Account
from mailcore.domains.hosted import hosted_domain
from mailcore.domains.names import InvalidHostname, address_to_ascii, hostname_to_ascii
from mailcore.errors import DomainError, ErrorCode, InvalidFields
from mailcore.fieldcrypt import decrypt, encrypt
from mailcore.mailboxes.models import Alias, ConnectionVerification, Mailbox
from mailcore.mailboxes.selectors import mailbox_reached_by
from mailcore.netsafety import Deadline
from mailcore.remotemail import SMTP_SECURITY, ProviderError, SmtpServer, imap_login_check, smtp_login_check
from mailcore.throttle import action_count

log = logging.getLogger(__name__)

# How long a successful IMAP login counts as a "recently cached IMAP session" (agent tools rule 2).
SESSION_CACHE_TTL = timedelta(hours=24)
CODE_DIGITS = 8
CODE_LIFETIME = timedelta(minutes=30)
CODE_ATTEMPTS = 5
_CODE_SALT = "mailwell.connected-mailbox.code"
# One answer for every address that may not be connected (hosted here, by anyone).
REFUSED = "this address cannot be connected here; an address on a domain hosted here is used through its own mailbox"


class AlreadyConnected(DomainError):
    code = ErrorCode.CONFLICT


class CodeNotSent(DomainError):
    """The mail with the code could not be handed to the mail server; nothing was kept."""

    code = ErrorCode.UNAVAILABLE


@dataclass(frozen=True)
class Connection:
    """What a connected mailbox logs in with; kept encrypted while it waits for its code."""

    imap_host: str
    imap_port: int
    imap_tls: bool
    username: str
    password: str
    smtp_host: str = ""
    smtp_port: int = 587
    smtp_security: str = "starttls"
    smtp_username: str = ""
    smtp_password: str = ""

    @property
    def smtp(self) -> SmtpServer | None:
        if not self.smtp_host:
            return None
        return SmtpServer(self.smtp_host, self.smtp_port, self.smtp_security, self.smtp_username or self.username,
                          self.smtp_password or self.password)


def _clean_address(email: str) -> str:
    """Lower-case, its domain in ASCII (as hosted addresses are kept), so every check compares alike."""
    try:
        email = address_to_ascii((email or "").strip().lower())
        validate_email(email)
    except (ValidationError, InvalidHostname):
        raise InvalidFields({"email": ["enter a valid email address"]}) from None
    return email


def _hosted_elsewhere(account: Account, address: str) -> bool:
    """Whether the address is hosted here, or on a domain another account hosts here: a verified
    domain of another account, a hosted mailbox's address, alias or subaddress (any account's), or
    a domain where another account has hosted mailboxes or aliases (its verification lapsed)."""
    domain_name = address.rpartition("@")[2]
    domain = hosted_domain(domain_name)
    if domain is not None and domain.account_id != account.pk:
        return True
    if mailbox_reached_by(address) is not None:
        return True
    suffix = f"@{domain_name}"
    others_mailboxes = Mailbox.objects.filter(kind=Mailbox.Kind.MANAGED, address__iendswith=suffix).exclude(
        account=account)
    others_aliases = Alias.objects.filter(address__iendswith=suffix).exclude(mailbox__account=account)
    return others_mailboxes.exists() or others_aliases.exists()


def _domain_verified_by(account: Account, address: str) -> bool:
    domain = hosted_domain(address.rpartition("@")[2])
    return domain is not None and domain.account_id == account.pk


def _clean_host(field: str, host: str) -> str:
    try:
        return hostname_to_ascii(host, allow_ip=True, require_dot=False)
    except InvalidHostname as error:
        raise InvalidFields({field: [str(error)]}) from None


def _check_servers(connection: Connection) -> None:
    """Log in to the IMAP server and the submission server side by side, each within the deadline."""
    seconds = settings.CONNECTED_MAILBOX_CHECK_SECONDS

    def imap() -> None:
        with Deadline(seconds) as deadline:
            imap_login_check(connection.imap_host, connection.imap_port, connection.imap_tls, connection.username,
                             connection.password, deadline=deadline)

    def smtp() -> None:
        if connection.smtp is not None:
            with Deadline(seconds) as deadline:
                smtp_login_check(connection.smtp, deadline=deadline)

    with ThreadPoolExecutor(max_workers=2) as pool:
        checks = [pool.submit(imap), pool.submit(smtp)]
    errors: dict[str, list[str]] = {}
    for check in checks:
        try:
            check.result()
        except ProviderError as error:
            errors.setdefault(error.field, []).append(str(error))
    if errors:
        raise InvalidFields(errors)


def _code_hash(account_id: int, address: str, code: str) -> str:
    return salted_hmac(_CODE_SALT, f"{account_id}:{address}:{code}", algorithm="sha256").hexdigest()


def _create_mailbox(account: Account, address: str, connection: Connection) -> Mailbox:
    mailbox = Mailbox(
        account=account,
        kind=Mailbox.Kind.CONNECTED,
        local_part=address.split("@")[0],
        address=address,
        imap_host=connection.imap_host,
        imap_port=connection.imap_port,
        imap_tls=connection.imap_tls,
        imap_username=connection.username,
        imap_password_encrypted=encrypt(connection.password),
        imap_session_verified_at=timezone.now(),
    )
    if connection.smtp is not None:
        smtp = connection.smtp
        mailbox.smtp_host, mailbox.smtp_port, mailbox.smtp_security = smtp.host, smtp.port, smtp.security
        mailbox.smtp_username, mailbox.smtp_password_encrypted = smtp.username, encrypt(smtp.password)
    try:
        with transaction.atomic():
            mailbox.save()
    except IntegrityError:
        raise AlreadyConnected(f"{address} is already connected in this account") from None
    return mailbox


def _mail_code(address: str, code: str) -> None:
    minutes = int(CODE_LIFETIME.total_seconds() // 60)
    body = (
        f"Someone asked to connect {address} to their account with us, to read and send its mail.\n\n"
        f"If it was you, enter this code to finish (it works for {minutes} minutes):\n\n"
        f"    {code}\n\n"
        "If it was not you, ignore this message: nothing is connected without the code.\n"
    )
    send_mail(f"Your code to connect {address}: {code}", body, None, [address])


def mailbox_connect(*, account: Account, email: str, imap_host: str, imap_port: int, imap_tls: bool, username: str,
                    password: str, smtp_host: str = "", smtp_port: int = 587, smtp_security: str = "starttls",
                    smtp_username: str = "", smtp_password: str = "") -> Mailbox | ConnectionVerification:
    """Check the logins, then connect the mailbox at once (its domain is verified by this account)
    or mail a code to the address and keep the connection waiting for it (returned)."""
    address = _clean_address(email)
    if _hosted_elsewhere(account, address):
        raise InvalidFields({"email": [REFUSED]})
    if Mailbox.objects.filter(account=account, address=address).exists():
        raise AlreadyConnected(f"{address} is already connected in this account")
    if smtp_security not in SMTP_SECURITY:
        raise InvalidFields({"smtp_security": [f"one of {', '.join(SMTP_SECURITY)}"]})
    connection = Connection(
        imap_host=_clean_host("imap_host", imap_host), imap_port=imap_port, imap_tls=imap_tls, username=username,
        password=password, smtp_host=_clean_host("smtp_host", smtp_host) if smtp_host else "",
        smtp_port=smtp_port, smtp_security=smtp_security, smtp_username=smtp_username, smtp_password=smtp_password)
    # Each attempt logs in to servers the caller named: bounded, so it is no scanner and no way to tie up workers.
    action_count(f"connected-check:{account.pk}", limit=settings.CONNECTED_MAILBOX_CHECKS_PER_HOUR,
                 what="mailbox connection attempts")
    _check_servers(connection)
    if _domain_verified_by(account, address):
        return _create_mailbox(account, address, connection)
    # A code mails an address the caller chose: bounded per account, like forwarding confirmations.
    action_count(f"connected-code:{account.pk}", limit=settings.CONNECTED_MAILBOX_CODES_PER_HOUR,
                 what="verification codes")
    code = f"{secrets.randbelow(10 ** CODE_DIGITS):0{CODE_DIGITS}d}"
    pending, _ = ConnectionVerification.objects.update_or_create(
        account=account, address=address,
        defaults={"settings_encrypted": encrypt(json.dumps(asdict(connection))),
                  "code_hash": _code_hash(account.pk, address, code), "attempts": 0,
                  "expires_at": timezone.now() + CODE_LIFETIME})
    # Mailed after the row is written, outside any transaction of ours (a slow relay must not hold a
    # write lock); a connection whose code was not sent is taken back, so none waits for nothing.
    try:
        _mail_code(address, code)
    except (smtplib.SMTPException, OSError) as error:
        log.warning("connected-mailbox code to %s not sent: %s", address, error)
        pending.delete()
        raise CodeNotSent(f"the mail with the code to {address} could not be sent; try again") from None
    return pending


def mailbox_connect_confirm(*, account: Account, email: str, code: str) -> Mailbox:
    """The code mailed to the address: right, the mailbox is connected; wrong, one of CODE_ATTEMPTS
    is spent (the last one ends the wait); expired, there is nothing to confirm."""
    address = _clean_address(email)
    code = "".join((code or "").split())
    now = timezone.now()
    with transaction.atomic():
        pending = ConnectionVerification.objects.select_for_update().filter(account=account, address=address).first()
        if pending is not None and pending.expires_at <= now:
            pending.delete()
            pending = None
        if pending is None:
            problem = "no code is waiting for this address (it may have expired); connect the mailbox again"
        elif not constant_time_compare(pending.code_hash, _code_hash(account.pk, address, code)):
            pending.attempts += 1
            left = CODE_ATTEMPTS - pending.attempts
            if left <= 0:
                pending.delete()
                problem = "wrong code, and no tries are left; connect the mailbox again for a new code"
            else:
                pending.save(update_fields=["attempts"])
                problem = f"wrong code; {left} {'try' if left == 1 else 'tries'} left"
        else:
            problem = None
            connection = Connection(**json.loads(decrypt(pending.settings_encrypted)))
            pending.delete()
    if problem:
        raise InvalidFields({"code": [problem]})
    if _hosted_elsewhere(account, address):  # hosted here since the code was mailed
        raise InvalidFields({"email": [REFUSED]})
    return _create_mailbox(account, address, connection)


def connection_verifications_purge_expired() -> int:
    """Forget connections whose code was never confirmed in time, and the logins they kept."""
    deleted, _ = ConnectionVerification.objects.filter(expires_at__lte=timezone.now()).delete()
    return deleted


def mailbox_disconnect(*, mailbox: Mailbox) -> None:
    """Forget a connected mailbox and its logins (the mail stays at its provider); a hosted
    mailbox is not this call's to delete."""
    if mailbox.is_managed:
        raise Mailbox.DoesNotExist("not a connected mailbox")
    mailbox.delete()


def connected_mailbox_get(*, account: Account, mailbox_id: int) -> Mailbox:
    """The account's connected mailbox; another account's, or a hosted one, is Mailbox.DoesNotExist."""
    return Mailbox.objects.get(account=account, pk=mailbox_id, kind=Mailbox.Kind.CONNECTED)


def connected_smtp_server(mailbox: Mailbox) -> SmtpServer:
    """The submission server a connected mailbox sends through, with its login."""
    return SmtpServer(mailbox.smtp_host, mailbox.smtp_port or 587, mailbox.smtp_security or "starttls",
                      mailbox.smtp_username, decrypt(mailbox.smtp_password_encrypted))


def mailbox_session_touch(*, mailbox: Mailbox) -> None:
    """Record a successful IMAP use of a connected mailbox."""
    if not mailbox.is_managed:
        Mailbox.objects.filter(pk=mailbox.pk).update(imap_session_verified_at=timezone.now())


def mailbox_has_cached_session(mailbox: Mailbox) -> bool:
    if mailbox.is_managed:
        return True
    verified = mailbox.imap_session_verified_at
    return verified is not None and timezone.now() - verified < SESSION_CACHE_TTL
