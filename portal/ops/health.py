"""/healthz: the process answers. /readyz: it can do its work: the database, and each service the
settings name (Redis, Dovecot's IMAP, the SMTP relay, rspamd and clamd behind it) answers within
READY_TIMEOUT_SECONDS. A load balancer sends traffic only to a ready instance; the answer names what
is not ready, and `scanners` says which scanners are on (scanning off is ready, and said so)."""
import socket
import ssl

from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from mailcore.outbound.relay import relay_reachable
from protection import rspamd

READY_TIMEOUT_SECONDS = 2


@never_cache
@require_GET
def healthz(request):
    return JsonResponse({"status": "ok"})


def _database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _redis() -> None:
    import redis

    redis.Redis.from_url(settings.REDIS_URL, socket_timeout=READY_TIMEOUT_SECONDS,
                         socket_connect_timeout=READY_TIMEOUT_SECONDS).ping()


def _greeting(host: str, port: int, expected: bytes) -> None:
    """The service's first line starts as its protocol says (IMAP `* OK`, SMTP `220`)."""
    with socket.create_connection((host, port), timeout=READY_TIMEOUT_SECONDS) as conn:
        line = conn.makefile("rb").readline(512)
    if not line.startswith(expected):
        raise ConnectionError(f"unexpected greeting {line[:40]!r}")


def _dovecot() -> None:
    if settings.IMAP_TLS:  # IMAPS: the TLS handshake completing, with a valid certificate, is its answer
        with socket.create_connection((settings.IMAP_HOST, settings.IMAP_PORT), timeout=READY_TIMEOUT_SECONDS) as raw:
            ssl.create_default_context().wrap_socket(raw, server_hostname=settings.IMAP_HOST).close()
        return
    _greeting(settings.IMAP_HOST, settings.IMAP_PORT, b"* OK")


def _relay() -> None:
    relay_reachable(READY_TIMEOUT_SECONDS)


def checks() -> dict:
    """The checks this instance's settings call for."""
    found = {"database": _database}
    if settings.REDIS_URL:
        found["redis"] = _redis
    if settings.MAIL_STORE == "imap":
        found["dovecot"] = _dovecot
    if settings.SMTP_URL:
        found["relay"] = _relay
    return found


def _scanners(results: dict) -> dict:
    """Which scanners are on; rspamd, and clamd when an antivirus rule is configured, are checks."""
    state = rspamd.state(timeout=READY_TIMEOUT_SECONDS)
    if state.configured:
        results["rspamd"] = "ok" if state.rspamd else "failed: rspamd does not answer"
        if state.antivirus_configured:
            results["clamav"] = "ok" if state.clamav else "failed: clamd does not answer rspamd"
    return {
        "rspamd": "on" if state.rspamd else ("down" if state.configured else "off"),
        "clamav": "on" if state.clamav else ("down" if state.antivirus_configured and state.rspamd else "off"),
        "bayes": "on" if state.bayes else "off",
        "summary": state.summary,
    }


@never_cache
@require_GET
def readyz(request):
    results = {}
    scanners = _scanners(results)
    for name, check in checks().items():
        try:
            check()
            results[name] = "ok"
        except Exception as error:  # noqa: BLE001 - any failure means not ready; its kind is the answer
            results[name] = f"failed: {error.__class__.__name__}"
    ready = all(result == "ok" for result in results.values())
    return JsonResponse({"status": "ready" if ready else "not ready", "checks": results, "scanners": scanners},
                        status=200 if ready else 503)
