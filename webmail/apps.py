from django.apps import AppConfig

from mailcore.sweep import Job


class WebmailConfig(AppConfig):
    """The web client's own data: owners' sessions, partners' brand and hostname, remote-image consent, drafts, replies and recipient suggestions."""

    name = "webmail"
    verbose_name = "Webmail"
    jobs = (Job("recheck-webmail-hostnames", "webmail.hostnames:webmail_hostnames_recheck_due", 30),)

    def ready(self) -> None:
        from mailcore.holders import mailbox_holder_forgotten
        from mailcore.sending.failures import failed_send_drafted
        from webmail.drafts import failed_send_keep_draft
        from webmail.sessions import mailbox_sessions_end

        mailbox_holder_forgotten.register(mailbox_sessions_end)
        failed_send_drafted.register(failed_send_keep_draft)
