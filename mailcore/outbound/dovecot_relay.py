"""Where mail Dovecot sends itself leaves from: its `submission_host` (docker/dovecot/dovecot.conf).
Pigeonhole's vacation replies (null sender, From the owner's address) and Sieve redirects (should
they be enabled) are DKIM-signed here with the From domain's key when we may sign for it
(mailcore.outbound.aligned), else with the platform's own, and handed to the next hop
(SMTP_URL's relay) as the app's own mail is. Run by `manage.py dovecot_relay`.

It signs what it is given, so only Dovecot may reach it (compose's internal submission network, as
the submission intake); never publish its port."""
import logging

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import Envelope, Session
from django.conf import settings

from mailcore.domains.dkim import DkimFormatError, dkim_sign
from mailcore.ormthreads import OrmThreads
from mailcore.outbound.aligned import address_domain, header_address, signing_domain
from mailcore.outbound.forwarded import forward_prepared
from mailcore.outbound.relay import Relay, SubmissionServer
from mailcore.smtpurl import parse_smtp_url
from mailcore.store.lmtp import parse_hostport
from mailcore.store.reading import header, parse_headers

log = logging.getLogger(__name__)

DEFAULT_PORT = 10027
MAX_MESSAGE_BYTES = 50 * 1024 * 1024  # a redirect carries the whole message it redirects
UNAVAILABLE = "451 4.3.0 Temporary problem relaying the message, try again shortly"
REDIRECTED_FROM = "X-Sieve-Redirected-From"  # Pigeonhole names the redirecting mailbox in it


def dovecot_mail_outgoing(envelope_from: str, raw: bytes) -> tuple[str, bytes]:
    """(envelope sender, signed bytes) of a message Dovecot sends."""
    headers = parse_headers(raw)
    from_domain = address_domain(header_address(header(headers, "From")))
    signed = dkim_sign(raw, domain_name=signing_domain(from_domain) or settings.SYSTEM_MAIL_DOMAIN)
    if envelope_from and not signing_domain(address_domain(envelope_from)):  # a redirect: someone else's sender
        forwarding = address_domain(header_address(header(headers, REDIRECTED_FROM)))
        # as the listener's forwards leave: SRS onto the redirecting domain, our results ARC-sealed
        return forward_prepared(signed, envelope_from=envelope_from,
                                forwarding_domain=signing_domain(forwarding) or settings.SYSTEM_MAIL_DOMAIN)
    return envelope_from, signed


def dovecot_mail_relay(envelope_from: str, recipients: list[str], raw: bytes, next_hop: str = "") -> str:
    """Sign and hand over one message; the SMTP reply for Dovecot (the worst recipient's)."""
    try:
        envelope_from, signed = dovecot_mail_outgoing(envelope_from, raw)
    except DkimFormatError as error:
        return f"554 5.6.0 The message cannot be signed: {error}"
    server = SubmissionServer.from_url(parse_smtp_url(next_hop)) if next_hop else None
    with Relay(server=server) as relay:
        outcomes = relay.send(envelope_from, recipients, signed)
    for status in ("refused", "deferred"):
        for outcome in outcomes:
            if outcome.status == status:
                return outcome.reply
    return "250 2.0.0 Relayed, signed"


class DovecotRelayHandler:
    def __init__(self, next_hop: str = ""):
        """`next_hop`: an SMTP URL to relay to instead of SMTP_URL (the tests' sink)."""
        self.next_hop = next_hop
        self.threads = OrmThreads(2, "dovecot-relay")

    async def handle_DATA(self, server, session: Session, envelope: Envelope) -> str:
        envelope_from = "" if envelope.mail_from in (None, "<>") else envelope.mail_from
        try:
            return await self.threads.run(dovecot_mail_relay, envelope_from, list(envelope.rcpt_tos),
                                          envelope.original_content, self.next_hop)
        except Exception:
            log.exception("mail from Dovecot (sender %r) not relayed", envelope_from)
            return UNAVAILABLE


class DovecotRelayController(Controller):
    def stop(self, *args, **kwargs) -> None:
        super().stop(*args, **kwargs)
        self.handler.threads.close()


def dovecot_relay_controller(listen: str, *, next_hop: str = "") -> DovecotRelayController:
    host, port = parse_hostport(listen, DEFAULT_PORT)
    return DovecotRelayController(DovecotRelayHandler(next_hop), hostname=host, port=port,
                                  server_hostname=settings.MAIL_HOST, data_size_limit=MAX_MESSAGE_BYTES,
                                  enable_SMTPUTF8=True, ident="Mailwell relay for Dovecot's mail")
