"""rspamd over its HTTP protocol: the one module that talks to the scanner (docker/rspamd/).

`check` asks the normal worker (RSPAMD_URL) for a verdict with the SMTP session's facts; `learn`,
`bayes_counts` and `state` use the controller (RSPAMD_CONTROLLER_URL, RSPAMD_PASSWORD). Anything
that keeps an answer from arriving (scanning off, refused connection, timeout, a 5xx, a reply that
is not rspamd's JSON) raises ScannerUnavailable with a plain reason: the listener answers 451 and
the sender retries, so no message is lost or delivered unscanned by accident.
"""
import http.client
import json
import logging
import os
import threading
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx
from django.conf import settings

logger = logging.getLogger(__name__)

# rspamd's symbols -> RFC 8601 result values, first match wins (docker/rspamd/README.md).
SPF_RESULTS = {"R_SPF_ALLOW": "pass", "R_SPF_FAIL": "fail", "R_SPF_SOFTFAIL": "softfail",
               "R_SPF_NEUTRAL": "neutral", "R_SPF_DNSFAIL": "temperror", "R_SPF_PERMFAIL": "permerror",
               "R_SPF_NA": "none"}
DKIM_RESULTS = {"R_DKIM_ALLOW": "pass", "R_DKIM_REJECT": "fail", "R_DKIM_TEMPFAIL": "temperror",
                "R_DKIM_PERMFAIL": "permerror", "R_DKIM_NA": "none"}
DMARC_RESULTS = {"DMARC_POLICY_ALLOW": "pass", "DMARC_POLICY_ALLOW_WITH_FAILURES": "pass",
                 "DMARC_POLICY_REJECT": "fail", "DMARC_POLICY_QUARANTINE": "fail",
                 "DMARC_POLICY_SOFTFAIL": "fail", "DMARC_DNSFAIL": "temperror", "DMARC_BAD_POLICY": "permerror",
                 "DMARC_NA": "none"}
DMARC_POLICIES = {"DMARC_POLICY_REJECT": "reject", "DMARC_POLICY_QUARANTINE": "quarantine",
                  "DMARC_POLICY_SOFTFAIL": "none"}
ARC_RESULTS = {"ARC_ALLOW": "pass", "ARC_REJECT": "fail", "ARC_INVALID": "fail", "ARC_DNSFAIL": "temperror",
               "ARC_NA": "none"}
VIRUS_SYMBOL = "CLAM_VIRUS"
VIRUS_FAIL_SYMBOL = "CLAM_VIRUS_FAIL"
GREYLIST_SYMBOL = "GREYLIST"
PROBE_TIMEOUT_SECONDS = 5


class ScannerUnavailable(Exception):
    """No verdict could be had: scanning is off, rspamd (or clamd behind it) did not answer."""


@dataclass(frozen=True)
class Symbol:
    score: float
    description: str = ""
    options: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scan:
    """rspamd's answer for one message. `action` is rspamd's own (no action, greylist, add header,
    rewrite subject, soft reject, reject); the product's thresholds decide what happens."""

    score: float
    required_score: float
    action: str
    symbols: dict[str, Symbol] = field(default_factory=dict)
    message_id: str = ""
    smtp_message: str = ""  # rspamd's reason for a reject or soft reject, if it gave one

    @property
    def virus(self) -> str:
        """The signature's name (e.g. "Eicar-Test-Signature"), or "" when no virus was found."""
        found = self.symbols.get(VIRUS_SYMBOL)
        if found is None:
            return ""
        return (found.options[0] if found.options else "unknown virus").removesuffix(".UNOFFICIAL")

    @property
    def is_virus(self) -> bool:
        return VIRUS_SYMBOL in self.symbols

    @property
    def antivirus_failed(self) -> bool:
        """clamd could not be asked: the attachments are unscanned (answer 451, never deliver)."""
        return VIRUS_FAIL_SYMBOL in self.symbols

    @property
    def greylisted(self) -> bool:
        """rspamd's greylisting asks this sender to come back later (answer 451 once)."""
        # A first attempt ("greylisted") and a retry before the delay ("too early"), which rspamd
        # answers at once, without the other checks: its score and symbols mean nothing yet.
        return self.action == "soft reject" and GREYLIST_SYMBOL in self.symbols

    def _result(self, table: Mapping[str, str]) -> str:
        return next((value for symbol, value in table.items() if symbol in self.symbols), "none")

    @property
    def spf(self) -> str:
        return self._result(SPF_RESULTS)

    @property
    def dkim(self) -> str:
        return self._result(DKIM_RESULTS)

    @property
    def dmarc(self) -> str:
        return self._result(DMARC_RESULTS)

    @property
    def dmarc_policy(self) -> str:
        """The policy of a failing From domain: "reject", "quarantine", "none"; "" when DMARC did not fail."""
        return next((value for symbol, value in DMARC_POLICIES.items() if symbol in self.symbols), "")

    @property
    def arc(self) -> str:
        return self._result(ARC_RESULTS)

    @property
    def dkim_domains(self) -> tuple[str, ...]:
        """Domains whose DKIM signature verified (header.d), from R_DKIM_ALLOW's options ("d.com:s=sel")."""
        passed = self.symbols.get("R_DKIM_ALLOW")
        return tuple(option.partition(":")[0] for option in passed.options) if passed else ()


@dataclass(frozen=True)
class ScannerState:
    """Which scanners are on, for /readyz, the operator console and `manage.py serve`."""

    configured: bool  # RSPAMD_URL is set
    rspamd: bool  # the normal worker answers
    clamav: bool  # an antivirus rule is configured and clamd answers through it
    bayes: bool  # the controller answers and Bayes has its Redis
    problems: tuple[str, ...] = ()  # plain sentences, empty when all that is configured works
    antivirus_configured: bool = False

    @property
    def summary(self) -> str:
        if not self.configured:
            return "Scanning is off: RSPAMD_URL is not set, so inbound mail is not scanned for spam or viruses."
        parts = [f"spam scanning {'on' if self.rspamd else 'DOWN'}",
                 f"virus scanning {'on' if self.clamav else ('DOWN' if self.antivirus_configured else 'off')}",
                 f"learning {'on' if self.bayes else 'off'}"]
        return "rspamd: " + ", ".join(parts) + "".join(f". {problem}" for problem in self.problems)


_clients: dict[int, httpx.Client] = {}
_clients_lock = threading.Lock()


def _http() -> httpx.Client:
    """One pooled client per process (kept-alive connections; a fork gets its own): a client made
    per request costs more CPU than rspamd's answer to a small message."""
    pid = os.getpid()
    client = _clients.get(pid)
    if client is None:
        with _clients_lock:
            client = _clients.get(pid)
            if client is None:
                client = _clients[pid] = httpx.Client(
                    limits=httpx.Limits(max_connections=64, max_keepalive_connections=16))
    return client


def _timeout(seconds: float | None = None) -> httpx.Timeout:
    seconds = seconds or settings.RSPAMD_TIMEOUT_SECONDS
    return httpx.Timeout(seconds, connect=min(5.0, seconds))


def _post(url: str, raw: bytes, headers: list[tuple[str, bytes]], timeout: float | None = None) -> httpx.Response:
    try:
        return _http().post(url, content=raw, headers=headers, timeout=_timeout(timeout))
    except httpx.HTTPError as error:
        raise ScannerUnavailable(f"rspamd at {url} did not answer: {error or type(error).__name__}") from error


class _Answer:
    """What _parse_scan reads of an HTTP answer (an httpx.Response has the same three)."""

    def __init__(self, status_code: int, content: bytes):
        self.status_code, self.content = status_code, content

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self):
        return json.loads(self.content)


_scan_connections = threading.local()
_REUSED_CONNECTION_CLOSED = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)


def _scan_connection(url: str, timeout: float) -> http.client.HTTPConnection:
    """This thread's kept-alive connection to the scanning worker. The listener asks rspamd once
    per recipient in its delivery threads; the standard library's client costs a fraction of
    httpx's CPU per request, which the benchmark of the inbound path counts (bench/scanning.py)."""
    key = (os.getpid(), url)
    connection = getattr(_scan_connections, "open", {}).get(key)
    if connection is None:
        parts = urlsplit(url)
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        connection = kind(parts.hostname, parts.port, timeout=min(5.0, timeout))
        _scan_connections.__dict__.setdefault("open", {})[key] = connection
    return connection


def _exchange(connection: http.client.HTTPConnection, path: str, raw: bytes, headers: list[tuple[str, bytes]],
              seconds: float) -> _Answer:
    if connection.sock is None:
        connection.connect()
    connection.sock.settimeout(seconds)
    connection.putrequest("POST", path, skip_accept_encoding=True)
    for name, value in headers:
        connection.putheader(name, value)
    connection.putheader("Content-Length", str(len(raw)))
    connection.endheaders(raw)
    response = connection.getresponse()
    answer = _Answer(response.status, response.read())
    if response.will_close:
        connection.close()
    return answer


def _scan_post(url: str, raw: bytes, headers: list[tuple[str, bytes]], timeout: float | None = None) -> _Answer:
    """POST to the scanning worker on this thread's connection; a kept-alive connection the server
    has closed meanwhile is opened again once (a scan is safe to repeat)."""
    seconds = timeout or settings.RSPAMD_TIMEOUT_SECONDS
    path = urlsplit(url).path
    connection = _scan_connection(url.removesuffix(path), seconds)
    try:
        if connection.sock is not None:
            try:
                return _exchange(connection, path, raw, headers, seconds)
            except _REUSED_CONNECTION_CLOSED:
                connection.close()
        return _exchange(connection, path, raw, headers, seconds)
    except (OSError, http.client.HTTPException) as error:
        connection.close()
        reason = "timed out" if isinstance(error, TimeoutError) else (error or type(error).__name__)
        raise ScannerUnavailable(f"rspamd at {url} did not answer: {reason}") from error


def _header(value: str) -> bytes:
    return value.encode("utf-8")


def _parse_scan(response: httpx.Response | _Answer) -> Scan:
    if response.status_code != 200:
        raise ScannerUnavailable(f"rspamd answered {response.status_code}: {response.text[:200]}")
    try:
        body = response.json()
        symbols = {
            name: Symbol(float(symbol.get("score", 0.0)), symbol.get("description", ""),
                         tuple(str(option) for option in symbol.get("options", ())))
            for name, symbol in body.get("symbols", {}).items()
        }
        return Scan(
            score=float(body["score"]), required_score=float(body.get("required_score", 0.0)),
            action=str(body["action"]), symbols=symbols, message_id=str(body.get("message-id", "")),
            smtp_message=str(body.get("messages", {}).get("smtp_message", "")),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ScannerUnavailable(f"rspamd's answer was not understood: {response.text[:200]}") from error


# rspamd's per-message settings (its HTTP protocol's Settings header): the greylist module's two symbols off.
NO_GREYLISTING = b'{"symbols_disabled": ["GREYLIST_CHECK", "GREYLIST_SAVE"]}'


def check(raw: bytes, *, client_ip: str, helo: str, envelope_from: str, recipients: Iterable[str],
          user: str | None = None, deliver_to: str | None = None, client_hostname: str | None = None,
          greylist: bool = True, timeout: float | None = None) -> Scan:
    """Scan one message with the SMTP session's facts. `user` is the authenticated submitter
    (outbound); `deliver_to` is the mailbox whose Bayes scope applies (else the first recipient);
    `client_hostname` the client's verified reverse name if the MTA knows it (XFORWARD NAME),
    else rspamd looks it up itself. `greylist=False` (a domain that does not greylist) turns rspamd's
    greylisting off for this scan, so it never answers a retry early with no score."""
    if not settings.RSPAMD_URL:
        raise ScannerUnavailable("Scanning is off (RSPAMD_URL is not set).")
    headers = [("Helo", _header(helo or "unknown")), ("From", _header(envelope_from or ""))]
    if client_ip:
        headers.append(("IP", _header(client_ip)))
    headers += [("Rcpt", _header(recipient)) for recipient in recipients]
    if user:
        headers.append(("User", _header(user)))
    if deliver_to:
        headers.append(("Deliver-To", _header(deliver_to)))
    if client_hostname and client_hostname.lower() not in {"unknown", "[unknown]"}:
        headers.append(("Hostname", _header(client_hostname)))
    if not greylist:
        headers.append(("Settings", NO_GREYLISTING))
    return _parse_scan(_scan_post(f"{settings.RSPAMD_URL}/checkv2", raw, headers, timeout))


def _controller() -> str:
    if not settings.RSPAMD_CONTROLLER_URL:
        raise ScannerUnavailable("Learning is off (RSPAMD_CONTROLLER_URL is not set).")
    return settings.RSPAMD_CONTROLLER_URL


def _controller_headers(scope: str | None = None) -> list[tuple[str, bytes]]:
    headers = [("Password", _header(settings.RSPAMD_PASSWORD))]
    if scope:
        headers.append(("Deliver-To", _header(scope)))
    return headers


def learn(raw: bytes, *, spam: bool, scope: str) -> None:
    """Train the Bayes of one scope (a mailbox's address) with one message. Learning the same
    message again as the same class changes nothing; learning it as the other class moves it."""
    url = f"{_controller()}/{'learnspam' if spam else 'learnham'}"
    response = _post(url, raw, _controller_headers(scope))
    # 208: already learned as this class; 204: too little text to learn from (rspamd skips it).
    if response.status_code in (200, 204, 208):
        if response.status_code != 200:
            logger.info("rspamd did not learn a message for %s: %s", scope, response.text[:200])
        return
    raise ScannerUnavailable(f"rspamd's controller answered {response.status_code}: {response.text[:200]}")


def _redis():
    import redis

    return redis.Redis.from_url(settings.RSPAMD_REDIS_URL, socket_timeout=5, socket_connect_timeout=5)


def bayes_counts(scope: str | None = None) -> dict[str, int]:
    """Messages learned as {"ham": n, "spam": n}: for one scope (read from rspamd's Redis, where
    per-user Bayes keeps `RS<scope>`), or for the whole site (the controller's /stat)."""
    if scope is not None:
        if not settings.RSPAMD_REDIS_URL:
            raise ScannerUnavailable("Bayes counts per mailbox need RSPAMD_REDIS_URL (rspamd's Redis).")
        import redis

        try:
            counts = _redis().hmget(f"RS{scope}", ["learns_ham", "learns_spam"])
        except redis.RedisError as error:
            raise ScannerUnavailable(f"rspamd's Redis did not answer: {error}") from error
        return {"ham": int(counts[0] or 0), "spam": int(counts[1] or 0)}
    try:
        response = _http().get(f"{_controller()}/stat", headers=_controller_headers(), timeout=_timeout())
        statfiles = response.json()["statfiles"]
    except (httpx.HTTPError, ValueError, KeyError) as error:
        raise ScannerUnavailable(f"rspamd's controller did not answer: {error}") from error
    counts = {"ham": 0, "spam": 0}
    for statfile in statfiles:
        counts["spam" if statfile.get("symbol") == "BAYES_SPAM" else "ham"] += int(statfile.get("revision", 0))
    return counts


def _probe_message() -> bytes:
    """A harmless message with an attachment, new each time (the antivirus module caches verdicts)."""
    return ("From: probe@localhost\r\nTo: probe@localhost\r\nSubject: scanner probe\r\nMIME-Version: 1.0\r\n"
            'Content-Type: multipart/mixed; boundary="probe"\r\n\r\n--probe\r\nContent-Type: text/plain\r\n\r\n'
            "probe\r\n--probe\r\nContent-Type: application/octet-stream\r\n"
            'Content-Disposition: attachment; filename="probe.bin"\r\n\r\n'
            f"mailwell scanner probe {uuid.uuid4().hex}\r\n--probe--\r\n").encode()


def _registered_symbols(timeout: float) -> set[str]:
    response = _http().get(f"{_controller()}/symbols", headers=_controller_headers(), timeout=_timeout(timeout))
    response.raise_for_status()
    return {rule["symbol"] for group in response.json() for rule in group.get("rules", ())}


def state(timeout: float = PROBE_TIMEOUT_SECONDS) -> ScannerState:
    """Ask rspamd what is on: the normal worker (ping), the controller (its symbols: an antivirus
    rule, Bayes), and clamd through rspamd (a probe that only the antivirus rule runs on)."""
    if not settings.RSPAMD_URL:
        return ScannerState(configured=False, rspamd=False, clamav=False, bayes=False,
                            problems=("Scanning is off: RSPAMD_URL is not set.",))
    problems = []
    try:
        rspamd_up = _http().get(f"{settings.RSPAMD_URL}/ping", timeout=_timeout(timeout)).text.strip() == "pong"
    except httpx.HTTPError:
        rspamd_up = False
    if not rspamd_up:
        problems.append(f"rspamd does not answer at {settings.RSPAMD_URL}: inbound mail is deferred (451).")
    symbols: set[str] = set()
    if settings.RSPAMD_CONTROLLER_URL:
        try:
            symbols = _registered_symbols(timeout)
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as error:
            problems.append(f"rspamd's controller does not answer at {settings.RSPAMD_CONTROLLER_URL} ({error}): "
                            "learning is off.")
    bayes = "BAYES_SPAM" in symbols
    antivirus_configured = VIRUS_SYMBOL in symbols
    clamav = False
    if antivirus_configured and rspamd_up:
        try:
            probe = _parse_scan(_post(f"{settings.RSPAMD_URL}/checkv2", _probe_message(),
                                      [("Settings", _header(json.dumps({"symbols_enabled": [VIRUS_SYMBOL]}))),
                                       ("IP", b"127.0.0.1")], timeout))
            clamav = not probe.antivirus_failed
        except ScannerUnavailable:
            clamav = False
        if not clamav:
            problems.append("clamd does not answer rspamd: inbound mail is deferred (451) until it does.")
    return ScannerState(configured=True, rspamd=rspamd_up, clamav=clamav, bayes=bayes,
                        problems=tuple(problems), antivirus_configured=antivirus_configured)
