"""A private Postfix instance (Debian's package) built from docker/postfix/ as production is: main.cf
with the instance's own values set on top, the master.cf docker/postfix/master-cf.sh composes
(Debian's with our services in place of its `smtp inet` line), and the lookup tables of docker/postfix/pgsql/ with their queries unchanged,
pointed at the test database (pgsql on PostgreSQL, sqlite on the SQLite file).

Ports are free loopback ports; nothing is chrooted (Debian copies files into the chroot in its own
start script, which a private instance does not run); the log is the instance's postfix.log."""
import os
import re
import shutil
import subprocess
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.db import connections

from testkit.smtp_sink import free_port

CONFIG_DIR = Path(__file__).resolve().parents[1] / "docker" / "postfix"
DEBIAN_MASTER = Path("/usr/share/postfix/master.cf.dist")
SERVICES = ("smtp", "submission", "10025")  # our inet services, each given a loopback port
INSTALL_HINT = "run scripts/install-system-deps.sh (postfix, postfix-pgsql, postfix-sqlite)"


@dataclass
class Postfix:
    directory: Path
    ports: dict[str, int]  # service name in master.cf -> its loopback port

    @property
    def config(self) -> Path:
        return self.directory / "etc"

    def log(self) -> str:
        path = self.directory / "postfix.log"
        return path.read_text(errors="replace") if path.exists() else ""


def _master_cf(ports: dict[str, int]) -> str:
    """docker/postfix/master-cf.sh's master.cf (as the image has it), every service unchrooted and
    our inet services on their loopback ports."""
    composed = subprocess.run(["sh", str(CONFIG_DIR / "master-cf.sh"), str(DEBIAN_MASTER)], check=True,
                              capture_output=True, text=True).stdout
    service = re.compile(r"^(\S+)\s+(inet|unix|unix-dgram|fifo|pass)\s+(\S+)\s+(\S+)\s+(\S+)\s+(.*)$")
    out = []
    for line in composed.splitlines():
        found = service.match(line)
        if found:
            name, kind, private, unprivileged, _chroot, rest = found.groups()
            if kind == "inet" and name in ports:
                name = f"127.0.0.1:{ports[name]}"
            line = f"{name} {kind} {private} {unprivileged} n {rest}"
        out.append(line)
    return "\n".join(out) + "\n"


def _query(map_file: Path) -> str:
    """The `query = ...` of a docker/postfix/pgsql map, with its continuation lines."""
    text = map_file.read_text()
    found = re.search(r"^query\s*=\s*(.*?)(?=^\S|\Z)", text, re.MULTILINE | re.DOTALL)
    return " ".join(found.group(1).split())


def _maps(directory: Path) -> str:
    """Write the instance's lookup tables; returns the map type (`pgsql` or `sqlite`)."""
    database = connections["default"].settings_dict
    if database["ENGINE"] == "django.db.backends.postgresql":
        kind = "pgsql"
        connection = (f"hosts = {database.get('HOST') or '127.0.0.1'}:{database.get('PORT') or 5432}\n"
                      f"dbname = {database['NAME']}\nuser = {database.get('USER') or 'postgres'}\n"
                      + (f"password = {database['PASSWORD']}\n" if database.get("PASSWORD") else ""))
    elif database["ENGINE"] == "django.db.backends.sqlite3":
        kind = "sqlite"
        path = Path(database["NAME"]).resolve()
        path.parent.chmod(0o755)  # Postfix's proxymap reads the test database as the postfix user
        # ... and, the file being in WAL mode, can only while a connection of ours keeps its -shm file
        # (proxymap may not create one in a folder it cannot write): a test that wrote nothing yet has none.
        connections["default"].ensure_connection()
        connection = f"dbpath = {path}\n"
    else:
        pytest.fail(f"Postfix has no map type for {database['ENGINE']}", pytrace=False)
    (directory / "maps").mkdir()
    for source in (CONFIG_DIR / "pgsql").glob("*.cf"):
        (directory / "maps" / source.name).write_text(connection + f"query = {_query(source)}\n")
    return kind


def _certificate(directory: Path) -> tuple[Path, Path]:
    cert, key = directory / "tls" / "fullchain.pem", directory / "tls" / "privkey.pem"
    cert.parent.mkdir()
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                    "/CN=mail.mailwell.test", "-keyout", str(key), "-out", str(cert)], check=True,
                   capture_output=True)
    return cert, key


def _postconf(config: Path, settings: dict[str, str]) -> None:
    subprocess.run(["/usr/sbin/postconf", "-c", str(config), "-e", *(f"{k}={v}" for k, v in settings.items())],
                   check=True, capture_output=True, text=True)


def _wait_listening(instance: Postfix, timeout: float = 20) -> None:
    import socket

    deadline = time.monotonic() + timeout
    for port in instance.ports.values():
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"Postfix did not listen on {port}\n{instance.log()[-3000:]}") from None
                time.sleep(0.1)


def _start_command(binary: str, config: Path, resolv_conf: Path | None) -> list[str]:
    """`postfix start`, or with `resolv_conf` started in a mount namespace of its own where that file is
    /etc/resolv.conf: its daemons then ask the test's DNS server (glibc takes no port: it listens on 53
    of a loopback address) and the machine's own resolver is left alone."""
    if resolv_conf is None:
        return [binary, "-c", str(config), "start"]
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount --bind "$0" /etc/resolv.conf && exec "$1" -c "$2" start', str(resolv_conf), binary, str(config)]


@contextmanager
def postfix(*, lmtp: str, relayhost: str = "", resolv_conf: Path | None = None, **main_cf: str):
    """A running instance whose hosted mail goes to `lmtp` (host:port of the app's listener: port 25
    proxies to it, queued mail goes over LMTP) and
    whose outbound mail goes to `relayhost` (host:port; empty: delivered directly, by MX, through the
    nameserver `resolv_conf` names; see _start_command)."""
    binary = shutil.which("postfix", path="/usr/sbin:/usr/local/sbin")
    if not binary or not DEBIAN_MASTER.exists():
        pytest.fail(f"Postfix is not installed: {INSTALL_HINT}.", pytrace=False)
    if os.geteuid() != 0:
        pytest.fail("The test Postfix must be started as root (its daemons run as the postfix user).", pytrace=False)
    directory = Path(tempfile.mkdtemp(prefix="mailwell-postfix-"))
    directory.chmod(0o755)
    for part in ("etc", "spool", "lib"):
        (directory / part).mkdir()
    shutil.chown(directory / "lib", "postfix")
    instance = Postfix(directory, {name: free_port() for name in SERVICES})
    shutil.copy(CONFIG_DIR / "main.cf", instance.config / "main.cf")
    (instance.config / "master.cf").write_text(_master_cf(instance.ports))
    kind = _maps(directory)
    cert, key = _certificate(directory)
    table = f"proxy:{kind}:{directory / 'maps'}"
    _postconf(instance.config, {
        "queue_directory": str(directory / "spool"), "data_directory": str(directory / "lib"),
        "maillog_file_prefixes": str(directory), "maillog_file": str(directory / "postfix.log"),
        "inet_interfaces": "127.0.0.1", "inet_protocols": "ipv4",
        "virtual_transport": f"lmtp:inet:{lmtp}", "mailwell_inbound_filter": f"inet:{lmtp}",
        "relayhost": f"[{relayhost.replace(':', ']:')}" if relayhost else "",
        "virtual_mailbox_domains": f"{table}/virtual-domains.cf",
        "virtual_mailbox_maps": f"{table}/virtual-mailboxes.cf",
        "smtpd_sender_login_maps": f"{table}/sender-logins.cf",
        "smtpd_recipient_restrictions": "reject_non_fqdn_recipient, reject_unknown_recipient_domain, "
                                        f"check_recipient_access {table}/recipient-access.cf",
        "smtpd_tls_cert_file": str(cert), "smtpd_tls_key_file": str(key),
        # the test machine has no DNS for the .test names our domains use, nor an MTA-STS resolver
        "smtp_dns_support_level": "disabled", "smtp_host_lookup": "native", "smtp_tls_policy_maps": "",
        **main_cf,
    })
    started = subprocess.run(_start_command(binary, instance.config, resolv_conf), capture_output=True, text=True)
    try:
        if started.returncode != 0:
            raise AssertionError(f"Postfix did not start\n{started.stderr}\n{instance.log()[-3000:]}")
        _wait_listening(instance)
        yield instance
    finally:
        subprocess.run([binary, "-c", str(instance.config), "stop"], capture_output=True)
        shutil.rmtree(directory, ignore_errors=True)
