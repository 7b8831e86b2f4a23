"""The webmail's tables, one module per concept: owners' sessions, partners' brand and hostname,
owners' filters and vacation reply (rendered to Sieve), and remote-image consent per sender."""
from mailcore.webmail.models.brand import WebmailBrand, WebmailHostname
from mailcore.webmail.models.consent import RemoteImageSender
from mailcore.webmail.models.filters import MailFilter, SieveScript, VacationAnswer, VacationReply
from mailcore.webmail.models.session import WebmailSession

__all__ = ["MailFilter", "RemoteImageSender", "SieveScript", "VacationAnswer", "VacationReply", "WebmailBrand",
           "WebmailHostname", "WebmailSession"]
