from django.apps import AppConfig

from mailcore.jobs import DELIVER_WEBHOOKS, DISPATCH_DUE_MAIL
from mailcore.sweep import PARTITIONED, SIDE_BY_SIDE, Job


class MailcoreConfig(AppConfig):
    """The mail kernel: accounts, partners, domains, mailboxes, the store, sending, inbound mail,
    delivery rules, events and webhooks."""

    name = "mailcore"
    verbose_name = "Mail core"
    jobs = (
        Job("dispatch-due-mail", "mailcore.sending.dispatch:outbound_dispatch_due", 1, drains=True,
            wake="mailcore.sending.dispatch:outbound_next_due", woken_by=DISPATCH_DUE_MAIL, parts=SIDE_BY_SIDE),
        Job("deliver-webhooks", "mailcore.webhooks.delivery:webhooks_deliver_due", 1, drains=True,
            woken_by=DELIVER_WEBHOOKS, parts=PARTITIONED),
        Job("return-failed-sends", "mailcore.sending.failures:failed_sends_return", 30),
        Job("recheck-pending-domains", "mailcore.domains.services:domains_recheck_due", 30),
        Job("dkim-rotation", "mailcore.domains.rotation:dkim_rotation_sweep", 60),
        Job("partner-terms", "mailcore.partners.lifecycle:partner_terms_sweep", 60),
        Job("purge-old-vacation-answers", "mailcore.rules.filters:vacation_answers_purge", 3600),
        Job("purge-expired-session-tokens", "mailcore.apikeys.sessions:session_tokens_purge_expired", 3600),
        Job("purge-expired-connection-codes", "mailcore.inbox.connected:connection_verifications_purge_expired",
            3600),
    )

    def ready(self) -> None:
        from mailcore import checks  # noqa: F401  (registers the production start-up checks)
        from mailcore.mailboxes.aliases import aliases_changed
        from mailcore.rules.filters import sieve_publish

        aliases_changed.register(sieve_publish)  # the script names the mailbox's aliases
