"""A real Dovecot for the tests: docker/dovecot/mailwell.conf (the production service) started
once per session on free loopback ports, reading mailboxes (and owners' Sieve scripts) from the
test database.

Only instance values are written here (paths, ports, the SQL connection, the Sieve dict's
connection, the master user's passwd-file, `submission_host`); the service itself is the shared
file. Mail Dovecot sends itself (vacation replies) goes, as in production, through our signing relay
(mailcore.outbound.dovecot_relay) to an SMTP sink on loopback started with it:
`dovecot.submitted.messages` (shared by the session: look at the messages a test added).

Dovecot reads mailboxes through its own database connection, so tests that use it are
transactional (`imap_settings` asks for that; mark the test `@pytest.mark.django_db(transaction=True)`
too so pytest-django orders it after the rollback tests) and take the `plans` fixture, because the
flush after each transactional test deletes the plans data migration 0002 made.
"""
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connections

from mailcore.accounts.models import Account, Plan
from mailcore.domains.services import domain_create
from mailcore.mailboxes.models import Mailbox
from mailcore.mailboxes.services import mailbox_create
from testkit.smtp_sink import SinkHandler, dovecot_relay, smtp_sink

CONFIG_DIR = Path(__file__).resolve().parents[1] / "docker" / "dovecot"
START_TIMEOUT_SECONDS = 15
STOP_TIMEOUT_SECONDS = 15
INSTALL_HINT = "run `make test`, which installs it (scripts/install-system-deps.sh)"
SIEVE_PLUGIN = Path("/usr/lib/dovecot/modules/lib90_sieve_plugin.so")


@dataclass(frozen=True)
class Dovecot:
    host: str
    imap_port: int
    lmtp_port: int
    master_user: str
    master_password: str
    directory: Path
    submission_port: int = 0
    submitted: SinkHandler | None = None  # what Dovecot sent through submission_host (signed by our relay)
    imaps_port: int = 0  # with start_dovecot(tls=True): IMAPS, as production serves owners' clients
    auth_port: int = 0  # Dovecot's SASL service, as Postfix's submission port asks it

    @property
    def log_path(self) -> Path:
        return self.directory / "dovecot.log"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def _dovecot_binary() -> str:
    found = shutil.which("dovecot") or shutil.which("dovecot", path="/usr/sbin:/usr/local/sbin")
    if not found:
        pytest.fail(f"Dovecot is not installed: {INSTALL_HINT}.", pytrace=False)
    if not SIEVE_PLUGIN.exists():
        pytest.fail(f"Dovecot's Sieve plugin (dovecot-sieve) is not installed: {INSTALL_HINT}.", pytrace=False)
    if os.geteuid() != 0:
        pytest.fail("The test Dovecot must be started as root: it serves mail as the `mail` user.", pytrace=False)
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _sql_connection() -> tuple[str, str]:
    """Dovecot's SQL driver and connect string for the test database Django just created."""
    database = connections["default"].settings_dict
    if database["ENGINE"] == "django.db.backends.sqlite3":
        name = str(database["NAME"])
        if name == ":memory:" or name.startswith("file:"):
            pytest.fail(
                "The SQLite test database is in memory, which Dovecot cannot read: "
                "the root conftest.py sets DATABASES['default']['TEST']['NAME'] to a file.",
                pytrace=False,
            )
        return "sqlite", str(Path(name).resolve())
    if database["ENGINE"] == "django.db.backends.postgresql":
        parts = {
            "host": database.get("HOST") or "127.0.0.1",
            "port": database.get("PORT") or "5432",
            "dbname": database["NAME"],
            "user": database.get("USER"),
            "password": database.get("PASSWORD"),
        }
        return "pgsql", " ".join(f"{key}={value}" for key, value in parts.items() if value)
    pytest.fail(f"Dovecot has no SQL driver for {database['ENGINE']}", pytrace=False)


def _master_users(user: str, password: str, nets: str = "") -> str:
    """The passwd-file line, made by the same script production's entrypoint runs."""
    env = {**os.environ, "DOVECOT_MASTER_USER": user, "DOVECOT_MASTER_PASSWORD": password,
           "DOVECOT_MASTER_NETS": nets}
    env["PATH"] = f"{env.get('PATH', '')}:/usr/sbin:/usr/bin:/sbin:/bin"
    result = subprocess.run(
        ["sh", str(CONFIG_DIR / "master-users.sh")], env=env, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        pytest.fail(f"master-users.sh failed: {result.stderr.strip()}", pytrace=False)
    return result.stdout


# Tests log in with wrong passwords on purpose: answer failures at once, with no escalating delay
# (production keeps Dovecot's auth penalty; start_dovecot(penalty=True) keeps it too).
NO_PENALTY = """auth_failure_delay = 0
service anvil {
  unix_listener anvil-auth-penalty {
    mode = 0
  }
}
"""


def _tls_config(directory: Path) -> str:
    """Production's TLS settings (docker/dovecot/dovecot.conf) with a certificate made for the test."""
    cert, key = directory / "tls-cert.pem", directory / "tls-key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                    "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return (f"ssl = required\nssl_min_protocol = TLSv1.2\nssl_cert = <{cert}\nssl_key = <{key}\n"
            "disable_plaintext_auth = yes\n")


def _instance_config(directory: Path, imap_port: int, lmtp_port: int, sql_file: Path, driver: str,
                     dict_file: Path, quota_file: Path, submission_port: int, penalty: bool,
                     imaps_port: int = 0, auth_port: int = 0) -> str:
    return f"""# One test run's Dovecot: instance values only; the service is the shared file.
!include {CONFIG_DIR / "mailwell.conf"}

instance_name = mailwell-test-{os.getpid()}
base_dir = {directory / "run"}
state_dir = {directory / "state"}
log_path = {directory / "dovecot.log"}
listen = 127.0.0.1
{_tls_config(directory) if imaps_port else "ssl = no\ndisable_plaintext_auth = no"}
mail_home = {directory / "mail"}/%d/%n
import_environment = $import_environment MAILWELL_MASTER_USERS={directory / "master-users"}

service imap-login {{
  inet_listener imap {{
    port = {imap_port}
  }}
  inet_listener imaps {{
    port = {imaps_port}
  }}
}}
service lmtp {{
  inet_listener lmtp {{
    address = 127.0.0.1
    port = {lmtp_port}
  }}
}}
service auth {{
  inet_listener sasl {{
    address = 127.0.0.1
    port = {auth_port}
  }}
}}
{"" if penalty else NO_PENALTY}
passdb {{
  driver = sql
  args = {sql_file}
}}
userdb {{
  driver = sql
  args = {sql_file}
}}
dict {{
  sieve = {driver}:{dict_file}
  quota = {driver}:{quota_file}
}}
# The dict process reads the test database as root: pytest's SQLite file sits in a private
# temporary directory (production's dict reads PostgreSQL as the dovecot user).
service dict {{
  user = root
}}
submission_host = 127.0.0.1:{submission_port}
plugin {{
  imapsieve_mailbox1_before = file:{CONFIG_DIR / "sent-once.sieve"};bindir=~/.sieve-bin
  sieve_before = file:{CONFIG_DIR / "junk-verdict.sieve"};bindir=~/.sieve-before-bin

  imapsieve_mailbox2_before = file:{CONFIG_DIR / "learn-spam.sieve"};bindir=~/.sieve-bin
  imapsieve_mailbox3_before = file:{CONFIG_DIR / "learn-ham.sieve"};bindir=~/.sieve-bin
  sieve_pipe_bin_dir = {directory / "sieve-pipe"}
}}
"""


def _wait_for_greeting(process: subprocess.Popen, port: int, instance: Dovecot) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as connection:
                if connection.recv(256).startswith(b"* OK"):
                    connection.sendall(b"a LOGOUT\r\n")
                    return
        except OSError:
            time.sleep(0.05)
    output = (instance.directory / "stderr.log").read_text(errors="replace")
    _stop(process)
    pytest.fail(f"Dovecot did not start (files in {instance.directory}).\n{output}\n{instance.log()}", pytrace=False)


def _group_alive(group: int) -> bool:
    """Whether a process of this group still runs (zombies wait for init and hold nothing)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, _parent, process_group = stat.read_text().rsplit(")", 1)[1].split()[:3]
        except (OSError, IndexError, ValueError):
            continue
        if int(process_group) == group and state != "Z":
            return True
    return False


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM, then wait until the master and every process it started (its process group) are
    gone: an auth worker still holding a database connection would block dropping the test DB."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
    while _group_alive(process.pid):
        if time.monotonic() > deadline:
            os.killpg(process.pid, signal.SIGKILL)
            break
        time.sleep(0.02)


def start_dovecot(master_user: str, *, submission_port: int = 0, submitted: SinkHandler | None = None,
                  master_password: str | None = None, penalty: bool = False,
                  tls: bool = False, master_nets: str = "") -> tuple[Dovecot, subprocess.Popen]:
    binary = _dovecot_binary()
    driver, connect = _sql_connection()
    directory = Path(tempfile.mkdtemp(prefix="mailwell-dovecot-"))
    directory.chmod(0o755)  # the `mail` user walks through it to the mail directory
    (directory / "mail").mkdir()
    shutil.chown(directory / "mail", "mail", "mail")
    instance = Dovecot("127.0.0.1", _free_port(), _free_port(), master_user,
                       master_password or secrets.token_urlsafe(24), directory, submission_port, submitted,
                       _free_port() if tls else 0, _free_port())

    master_users = directory / "master-users"
    master_users.write_text(_master_users(instance.master_user, instance.master_password, master_nets))
    shutil.chown(master_users, "root", "dovecot")  # the auth process runs as dovecot
    master_users.chmod(0o640)
    sql_file = directory / "dovecot-sql.conf.ext"
    sql_file.write_text(
        f"driver = {driver}\nconnect = {connect}\n!include {CONFIG_DIR / 'dovecot-sql-queries.conf.ext'}\n"
    )
    sql_file.chmod(0o600)
    dict_file = directory / "dovecot-dict-sieve.conf.ext"
    dict_file.write_text(f"connect = {connect}\n!include {CONFIG_DIR / 'dovecot-dict-sieve-maps.conf.ext'}\n")
    dict_file.chmod(0o600)
    quota_file = directory / "dovecot-dict-quota.conf.ext"
    quota_file.write_text(f"connect = {connect}\n!include {CONFIG_DIR / 'dovecot-dict-quota-maps.conf.ext'}\n")
    quota_file.chmod(0o600)
    # IMAP moves into and out of Junk run production's script; dovecot_learns_with() points it at
    # an rspamd (until then it learns nothing).
    (directory / "sieve-pipe").mkdir()
    (directory / "sieve-pipe" / "rspamd-learn").symlink_to(CONFIG_DIR / "rspamd-learn.sh")
    config = directory / "dovecot.conf"
    config.write_text(_instance_config(directory, instance.imap_port, instance.lmtp_port, sql_file, driver,
                                       dict_file, quota_file, submission_port, penalty, instance.imaps_port,
                                       instance.auth_port))

    with open(directory / "stderr.log", "wb") as stderr:
        process = subprocess.Popen(
            [binary, "-F", "-c", str(config)], stdout=stderr, stderr=subprocess.STDOUT, start_new_session=True
        )
    _wait_for_greeting(process, instance.imap_port, instance)
    return instance, process


def dovecot_learns_with(instance: Dovecot, *, controller_url: str, password: str) -> None:
    """Point the instance's IMAP learning (rspamd-learn.sh) at an rspamd controller, as production's
    entrypoint does from RSPAMD_CONTROLLER_URL and RSPAMD_PASSWORD; read by each move."""
    settings_file = instance.directory / "sieve-pipe" / "rspamd-learn.env"
    settings_file.write_text(f"RSPAMD_CONTROLLER_URL={controller_url}\nRSPAMD_PASSWORD={password}\n")
    shutil.chown(settings_file, "root", "mail")
    settings_file.chmod(0o640)


def stop_dovecot(instance: Dovecot, process: subprocess.Popen) -> None:
    """Stop an instance start_dovecot started and remove its files (mail included)."""
    _stop(process)
    shutil.rmtree(instance.directory, ignore_errors=True)


def managed_mailbox(*, password: str, plan: Plan | None = None) -> Mailbox:
    """A managed mailbox on a premium account, at a domain of its own: Dovecot's mail directory
    outlives the database flush between tests, so an address is never used twice."""
    account = Account.objects.create(name="Mailbox owner", plan=Plan.objects.get(code="premium"))
    domain = domain_create(account=account, name=f"d{uuid.uuid4().hex[:12]}.test")
    return mailbox_create(domain=domain, local_part="owner", password=password, plan=plan)


def use_store(request, settings) -> str:
    """Point the app at the store a test is parametrized with: "imap" (the suite's Dovecot, through
    the master user, as in production) or "embedded". Returns a domain name for the test's mailbox:
    on Dovecot a mailbox's mail outlives the test database, so each test there gets its own domain."""
    if request.param == "imap":
        request.getfixturevalue("imap_settings")
        return f"d{uuid.uuid4().hex[:10]}.test"
    settings.MAIL_STORE = "embedded"
    return "example.test"


def message(subject: str, body: str = "Hello.", *, sender: str = "Bob Example <bob@example.test>",
            date: str = "Wed, 04 Mar 2026 05:06:07 +0000", attachment: bool = False, pad_to: int = 0) -> bytes:
    """A message with CRLF line ends, as IMAP returns it; `pad_to` makes it exactly that many bytes."""
    headers = f"From: {sender}\r\nTo: owner@example.test\r\nSubject: {subject}\r\nDate: {date}\r\n" \
              f"Message-ID: <{uuid.uuid4().hex}@example.test>\r\nMIME-Version: 1.0\r\n"
    if attachment:
        raw = (headers + 'Content-Type: multipart/mixed; boundary="b1"\r\n\r\n--b1\r\n'
               f"Content-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n--b1\r\n"
               'Content-Type: application/pdf; name="invoice.pdf"\r\n'
               'Content-Disposition: attachment; filename="invoice.pdf"\r\n'
               "Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--b1--\r\n").encode()
    else:
        raw = (headers + f"Content-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n").encode()
    if pad_to:
        raw += b"x" * (pad_to - len(raw) - 2) + b"\r\n"
    return raw


def restore_plans() -> None:
    """Re-create the plans (mailcore 0002) and the launch prices (billing 0002): a transactional
    test's flush deletes the rows data migrations wrote."""
    from django.apps import apps

    import_module("mailcore.migrations.0002_plans").create_plans(apps, None)
    import_module("billing.migrations.0002_launch_prices").seed(apps, None)


@pytest.fixture(scope="session")
def dovecot(django_db_setup) -> Iterator[Dovecot]:
    with smtp_sink() as (sink_port, submitted), dovecot_relay(f"smtp://127.0.0.1:{sink_port}") as submission_port:
        # Master logins only from the app's network, as compose sets DOVECOT_MASTER_NETS.
        instance, process = start_dovecot(settings.DOVECOT_MASTER_USER, submission_port=submission_port,
                                          submitted=submitted, master_nets="127.0.0.0/8")
        try:
            yield instance
        finally:
            stop_dovecot(instance, process)


@pytest.fixture
def imap_settings(settings, dovecot: Dovecot, transactional_db) -> Dovecot:
    """Point the app at the test Dovecot: the `imap` store through its master user. Transactional,
    so the rows a test writes are committed where Dovecot reads them."""
    settings.MAIL_STORE = "imap"
    settings.IMAP_HOST = dovecot.host
    settings.IMAP_PORT = dovecot.imap_port
    settings.IMAP_TLS = False
    settings.IMAP_TIMEOUT_SECONDS = 10
    settings.DOVECOT_MASTER_USER = dovecot.master_user
    settings.DOVECOT_MASTER_PASSWORD = dovecot.master_password
    settings.DOVECOT_LMTP = f"{dovecot.host}:{dovecot.lmtp_port}"
    return dovecot


@pytest.fixture
def plans(db) -> None:
    restore_plans()
