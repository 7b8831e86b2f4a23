"""The boundary to Dovecot's LMTP server: hand one message to one mailbox and return its reply.

One recipient per transaction: after DATA an LMTP server answers once per recipient, and
smtplib reads only the first answer.
"""
import smtplib

LMTP_TIMEOUT_SECONDS = 60


def parse_hostport(value: str, default_port: int) -> tuple[str, int]:
    """"host:port", "[v6]:port" or "host" into (host, port)."""
    value = value.strip()
    if value.startswith("["):
        host, _, rest = value[1:].partition("]")
        return host, int(rest.lstrip(":") or default_port)
    host, colon, port = value.rpartition(":")
    if not colon or ":" in host:  # no port, or a bare IPv6 address
        return value, default_port
    return host, int(port)


def lmtp_deliver(address: str, *, envelope_from: str, recipient: str, raw: bytes) -> str:
    """The server's reply for this recipient, e.g. "250 2.0.0 <x@y> Saved"; 451 4.3.0 when unreachable."""
    host, port = parse_hostport(address, 24)
    options = ["BODY=8BITMIME"] if any(byte > 127 for byte in raw) else []
    try:
        with smtplib.LMTP(host, port, timeout=LMTP_TIMEOUT_SECONDS) as client:
            client.sendmail(envelope_from, [recipient], raw, mail_options=options)
            return f"250 2.0.0 Delivered to {recipient}"
    except smtplib.SMTPRecipientsRefused as error:
        code, text = error.recipients[recipient]
    except smtplib.SMTPResponseException as error:  # sender refused, or the DATA reply (quota...)
        code, text = error.smtp_code, error.smtp_error
    except (OSError, smtplib.SMTPException) as error:
        return f"451 4.3.0 Mail store unavailable ({error.__class__.__name__}), try again later"
    return f"{code} {text.decode('utf-8', errors='replace') if isinstance(text, bytes) else text}"
