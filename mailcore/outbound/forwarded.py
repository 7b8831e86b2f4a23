"""What a forward leaves with, in one place for every path that forwards or redirects: the
listener's forwarding rules (mailcore.inbound.delivery) and Sieve redirects of Dovecot-sent mail."""
from mailcore.outbound.arc import arc_seal
from mailcore.outbound.srs import srs_forward


def forward_prepared(raw: bytes, *, envelope_from: str, forwarding_domain: str) -> tuple[str, bytes]:
    """The envelope sender (SRS onto the forwarding domain; null stays null) and the bytes (with an
    ARC set of our results when the message carries them) a forward from that domain leaves with."""
    return srs_forward(envelope_from, forwarding_domain), arc_seal(raw, domain_name=forwarding_domain)
