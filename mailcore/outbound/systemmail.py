"""The email backend every system mail leaves through (Django's mail API: sign-up verification,
password resets, partner approval, forwarding confirmations, held-send notices, ...): its From is a
domain we sign for (mailcore.outbound.aligned), its Message-ID is on that domain, it is DKIM-signed
with that domain's key and handed to the next hop by mailcore.outbound.relay: SMTP_URL's relay, or
without one the local outbox (and, with `echo`, the console, where `make run` shows people their
verification links)."""
import copy
import email.policy
import smtplib
import sys
import threading
from email.utils import formataddr, getaddresses, make_msgid

from django.core.mail.backends.base import BaseEmailBackend

from mailcore.domains.dkim import dkim_sign
from mailcore.outbound.aligned import address_domain, header_address, signing_domain, system_address
from mailcore.outbound.relay import Relay


class SystemMailNotSent(smtplib.SMTPException):
    """The next hop deferred or refused a system mail (callers that offer a retry catch SMTPException)."""


class SignedRelayBackend(BaseEmailBackend):
    """MAILERS["default"]: one relay session per batch of messages."""

    def __init__(self, *, echo: bool = False, stream=None, fail_silently: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.echo = echo
        self.stream = stream or sys.stdout
        self.fail_silently = fail_silently
        self._relay: Relay | None = None
        self._lock = threading.RLock()

    def open(self) -> bool:
        if self._relay is not None:
            return False
        self._relay = Relay()
        return True

    def close(self) -> None:
        if self._relay is not None:
            self._relay.close()
            self._relay = None

    def send_messages(self, email_messages) -> int:
        if not email_messages:
            return 0
        with self._lock:
            created = self.open()
            try:
                return sum(1 for message in email_messages if self._send(message))
            finally:
                if created:
                    self.close()

    def _send(self, message) -> bool:
        recipients = [header_address(address) or address for address in message.recipients()]
        if not recipients:
            return False
        envelope_from, raw = system_mail_bytes(message)
        if self.echo:
            self.stream.write(raw.decode("utf-8", errors="replace").replace("\r\n", "\n") + "\n" + "-" * 79 + "\n")
            self.stream.flush()
        failed = [outcome for outcome in self._relay.send(envelope_from, recipients, raw) if not outcome.accepted]
        if failed and not self.fail_silently:
            raise SystemMailNotSent("; ".join(f"{outcome.recipient}: {outcome.reply}" for outcome in failed))
        return not failed


def system_mail_bytes(message) -> tuple[str, bytes]:
    """(envelope sender, signed bytes) of a Django EmailMessage, From aligned with the signature (the
    caller's message is left as it was)."""
    message = copy.copy(message)
    message.extra_headers = dict(message.extra_headers)
    from_value = str(message.extra_headers.get("From", message.from_email))
    sender = header_address(from_value)
    domain = signing_domain(address_domain(sender))
    if domain is None:  # a From we cannot sign for: sent From ours, replies still reach the one it named
        if sender and not message.reply_to:
            message.reply_to = [from_value]
        display = [name for name, _ in getaddresses([from_value])][:1]
        sender = system_address()
        domain = address_domain(sender)
        message.extra_headers = {name: value for name, value in message.extra_headers.items() if name.lower() != "from"}
        message.from_email = formataddr((display[0] if display else "", sender))
    built = message.message(policy=email.policy.SMTP)
    if not str(built["Message-ID"] or "").strip().lower().endswith(f"@{domain}>"):  # not Django's DNS_NAME
        del built["Message-ID"]
        built["Message-ID"] = make_msgid(domain=domain)
    return sender, dkim_sign(built.as_bytes(), domain_name=domain)
