"""Parse SMTP_URL (smtp://user:pass@host:587?starttls=true, smtps://host:465) into relay settings."""
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit


@dataclass(frozen=True)
class SmtpRelay:
    host: str
    port: int
    username: str
    password: str
    starttls: bool
    implicit_tls: bool


def parse_smtp_url(url: str) -> SmtpRelay:
    parts = urlsplit(url)
    if parts.scheme not in {"smtp", "smtps"}:
        raise ValueError(f"SMTP_URL must start with smtp:// or smtps://, got {parts.scheme!r}")
    if not parts.hostname:
        raise ValueError("SMTP_URL has no host")
    query = parse_qs(parts.query)
    implicit_tls = parts.scheme == "smtps"
    starttls = not implicit_tls and query.get("starttls", ["false"])[0].lower() in {"1", "true", "yes"}
    return SmtpRelay(
        host=parts.hostname,
        port=parts.port or (465 if implicit_tls else 25),
        username=unquote(parts.username or ""),
        password=unquote(parts.password or ""),
        starttls=starttls,
        implicit_tls=implicit_tls,
    )
