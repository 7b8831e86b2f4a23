"""The submission intake: the SMTP server Postfix's port 587 hands each authenticated session to
(smtpd_proxy_filter, before Postfix queues anything), so the owner's client sees our answer, a
refusal included, while it is still connected. Run by `manage.py submission_intake`.

It trusts the envelope sender: only Postfix reaches it (the internal network, as the relay port
10025), and Postfix lets a session use only its login's own addresses. Never publish its port."""
import logging

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import Envelope, Session
from django.conf import settings

from mailcore.ormthreads import OrmThreads
from mailcore.sending.services import MAX_RECIPIENTS
from mailcore.sending.submission import TOO_MANY_RECIPIENTS, Refused, submission_accept
from mailcore.store.lmtp import parse_hostport

log = logging.getLogger(__name__)

DEFAULT_PORT = 10026
MAX_MESSAGE_BYTES = 50 * 1024 * 1024  # submission's message_size_limit (master.cf); each plan's after DATA
UNAVAILABLE = "451 4.3.0 Temporary problem accepting the message, try again shortly"


class SubmissionHandler:
    def __init__(self):
        self.threads = OrmThreads(4, "submission")

    async def handle_RCPT(self, server, session: Session, envelope: Envelope, address: str,
                          rcpt_options: list[str]) -> str:
        if len(envelope.rcpt_tos) >= MAX_RECIPIENTS:
            return TOO_MANY_RECIPIENTS
        envelope.rcpt_tos.append(address)
        return "250 2.1.5 Recipient ok"

    async def handle_DATA(self, server, session: Session, envelope: Envelope) -> str:
        try:
            sent = await self.threads.run(submission_accept, envelope.mail_from or "", list(envelope.rcpt_tos),
                                          envelope.original_content)
        except Refused as refused:
            log.info("submission from %s refused: %s", envelope.mail_from, refused.reply)
            return refused.reply
        except Exception:
            log.exception("submission from %s failed", envelope.mail_from)
            return UNAVAILABLE
        return f"250 2.0.0 Queued as {sent.message_id}"


class SubmissionController(Controller):
    def stop(self, *args, **kwargs) -> None:
        super().stop(*args, **kwargs)
        self.handler.threads.close()


def submission_controller(listen: str) -> SubmissionController:
    host, port = parse_hostport(listen, DEFAULT_PORT)
    return SubmissionController(SubmissionHandler(), hostname=host, port=port, server_hostname=settings.MAIL_HOST,
                                data_size_limit=MAX_MESSAGE_BYTES, enable_SMTPUTF8=True,
                                ident="Mailwell submission intake")
