"""The webmail's tables, one module per concept: owners' sessions, partners' brand and hostname,
and remote-image consent per sender."""
from webmail.models.brand import WebmailBrand, WebmailHostname
from webmail.models.consent import RemoteImageSender
from webmail.models.session import WebmailSession

__all__ = ["RemoteImageSender", "WebmailBrand", "WebmailHostname", "WebmailSession"]
