"""Private scanners on loopback from the production files (docker/rspamd/): what `manage.py serve`
starts on one machine and what the test suite starts (testkit/rspamd.py, testkit/clamd.py).

Only instance values are given here, as environment variables rspamd's templates read (RSPAMD_*:
ports, password, Redis, DNS servers, clamd); the configuration itself is the shared folder.
"""
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

CONFIG_DIR = Path(settings.BASE_DIR) / "docker" / "rspamd"
RSPAMD_MAIN_CONFIG = Path("/etc/rspamd/rspamd.conf")
START_TIMEOUT_SECONDS = 60  # a first start compiles Hyperscan databases (about 15 s here)
STOP_TIMEOUT_SECONDS = 15
# The test-built signature: the EICAR test file anywhere in a scanned part (ClamAV's .ndb format).
EICAR = rb"X5O!P%@AP[4\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*"
EICAR_SIGNATURE_NAME = "Eicar-Test-Signature"


class ScannerStartError(Exception):
    """A private scanner could not be started; the message says why, for a person to read."""


@dataclass
class Process:
    name: str
    popen: subprocess.Popen
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def alive(self) -> bool:
        return self.popen.poll() is None


@dataclass
class RedisServer:
    host: str
    port: int
    process: Process

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"


@dataclass
class Clamd:
    host: str
    port: int
    process: Process
    database_dir: Path


@dataclass
class Rspamd:
    host: str
    normal_port: int
    controller_port: int
    fuzzy_port: int
    password: str
    directory: Path
    process: Process
    redis_url: str
    clamd: Clamd | None = None
    greylist_delay: str = "5min"
    redis: RedisServer | None = None  # a private redis-server started for this instance, if any

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.normal_port}"

    @property
    def controller_url(self) -> str:
        return f"http://{self.host}:{self.controller_port}"

    def log(self) -> str:
        return self.process.log()


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def binary(name: str) -> str | None:
    if os.sep in name:
        return name if os.access(name, os.X_OK) else None
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/local/sbin:/usr/bin:/sbin")


PR_SET_PDEATHSIG = 1  # prctl(2)
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def _ends_with_parent() -> None:
    """In the child before exec: SIGTERM when the process that started it dies, even by SIGKILL, so
    a killed test run or `make run` leaves no private scanner behind (stop() is the orderly way)."""
    if _libc is not None:
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _spawn(name: str, command: list[str], directory: Path, env: dict[str, str] | None = None) -> Process:
    log_path = directory / f"{name}.log"
    with open(log_path, "ab") as log:
        popen = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 env=env, start_new_session=True, cwd=directory, preexec_fn=_ends_with_parent)
    return Process(name, popen, log_path)


def stop(process: Process | None) -> None:
    """SIGTERM to the process group, SIGKILL after the timeout: rspamd's workers go with their main."""
    if process is None or process.popen.poll() is not None:
        return
    try:
        os.killpg(process.popen.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        process.popen.wait(timeout=STOP_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(process.popen.pid, signal.SIGKILL)
        process.popen.wait()
    deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
    while time.monotonic() < deadline:  # the workers leave just after their main process
        try:
            os.killpg(process.popen.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    try:
        os.killpg(process.popen.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _wait(process: Process, ready, what: str, timeout: float = START_TIMEOUT_SECONDS) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not process.alive():
            raise ScannerStartError(f"{what} exited at start (status {process.popen.returncode}):\n{process.log()[-3000:]}")
        try:
            if ready():
                return
        except OSError:
            pass
        time.sleep(0.1)
    stop(process)
    raise ScannerStartError(f"{what} did not answer within {timeout:.0f} s:\n{process.log()[-3000:]}")


def start_redis(directory: Path) -> RedisServer:
    """A throwaway redis-server for rspamd (Bayes, fuzzy hashes, greylisting): nothing on disk."""
    found = binary("redis-server")
    if not found:
        raise ScannerStartError("redis-server is not installed (apt-get install redis-server)")
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    process = _spawn("redis", [found, "--bind", "127.0.0.1", "--port", str(port), "--save", "",
                               "--appendonly", "no", "--dir", str(directory)], directory)

    def ready() -> bool:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(16).startswith(b"+PONG")

    _wait(process, ready, "redis-server")
    return RedisServer("127.0.0.1", port, process)


def write_eicar_database(database_dir: Path) -> Path:
    """A ClamAV signature database with one signature, EICAR's, written here (no download)."""
    database_dir.mkdir(parents=True, exist_ok=True)
    path = database_dir / "mailwell-test.ndb"
    path.write_text(f"{EICAR_SIGNATURE_NAME}:0:*:{EICAR.hex()}\n")
    return path


def has_signatures(database_dir: Path) -> bool:
    return database_dir.is_dir() and any(
        path.suffix in {".cvd", ".cld", ".ndb", ".hdb", ".hsb", ".ldb", ".cdb", ".ndu", ".mdb"}
        for path in database_dir.iterdir())


def start_clamd(directory: Path, database_dir: Path) -> Clamd:
    """clamd on a loopback port reading the signatures in database_dir."""
    found = binary("clamd")
    if not found:
        raise ScannerStartError("clamd is not installed (apt-get install clamav-daemon)")
    if not has_signatures(database_dir):
        raise ScannerStartError(f"clamd has no signature database in {database_dir} (run freshclam)")
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = directory / "clamd.conf"
    config.write_text(f"Foreground yes\nTCPSocket {port}\nTCPAddr 127.0.0.1\nDatabaseDirectory {database_dir}\n"
                      f"PidFile {directory / 'clamd.pid'}\nLogTime yes\nMaxThreads 4\n")
    process = _spawn("clamd", [found, "-c", str(config)], directory)

    def ready() -> bool:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as connection:
            connection.sendall(b"zPING\0")
            return connection.recv(16).startswith(b"PONG")

    _wait(process, ready, "clamd")
    return Clamd("127.0.0.1", port, process, database_dir)


def start_rspamd(directory: Path, *, password: str, redis_url: str, dns_nameservers: list[str] | None = None,
                 clamd: Clamd | None = None, greylist_delay: str = "5min", bayes_min_learns: int | None = None,
                 hs_cache_dir: Path | None = None, workers: int = 1, wait: bool = True) -> Rspamd:
    """rspamd from docker/rspamd/ on free loopback ports; DNS look-ups go to dns_nameservers.
    With wait=False it returns at once (its ports are known); `wait_for_rspamd` waits later."""
    found = binary(settings.RSPAMD_BINARY)
    if not found:
        raise ScannerStartError(f"rspamd is not installed ({settings.RSPAMD_BINARY} not found; apt-get install rspamd)")
    if not RSPAMD_MAIN_CONFIG.exists():
        raise ScannerStartError(f"rspamd's main configuration {RSPAMD_MAIN_CONFIG} is missing")
    from urllib.parse import urlsplit

    redis = urlsplit(redis_url)
    directory.mkdir(parents=True, exist_ok=True)
    for sub in ("db", "run", "log"):
        (directory / sub).mkdir(exist_ok=True)
    as_root = os.geteuid() == 0
    if as_root:
        for path in (directory / "db", directory / "run", directory / "log", *([hs_cache_dir] if hs_cache_dir else [])):
            path.mkdir(parents=True, exist_ok=True)
            shutil.chown(path, "_rspamd", "_rspamd")
    instance_ports = free_port(), free_port(), free_port(socket.SOCK_DGRAM)
    env = {key: value for key, value in os.environ.items() if not key.startswith("RSPAMD_")}
    env.update({
        "RSPAMD_NORMAL_BIND": f"127.0.0.1:{instance_ports[0]}",
        "RSPAMD_CONTROLLER_BIND": f"127.0.0.1:{instance_ports[1]}",
        "RSPAMD_FUZZY_BIND": f"127.0.0.1:{instance_ports[2]}",
        "RSPAMD_NORMAL_WORKERS": str(workers),
        "RSPAMD_CONTROLLER_PASSWORD": password,
        "RSPAMD_REDIS_SERVERS": f"{redis.hostname}:{redis.port or 6379}",
        "RSPAMD_GREYLIST_DELAY": greylist_delay,
    })
    if redis.path.strip("/"):
        env["RSPAMD_REDIS_DB"] = redis.path.strip("/")
    if redis.password:
        env["RSPAMD_REDIS_PASSWORD"] = redis.password
    if dns_nameservers:
        env["RSPAMD_DNS_NAMESERVERS"] = ",".join(dns_nameservers)
    if clamd:
        env["RSPAMD_CLAMD_SERVERS"] = f"{clamd.host}:{clamd.port}"
    if bayes_min_learns is not None:
        env["RSPAMD_BAYES_MIN_LEARNS"] = str(bayes_min_learns)
    if hs_cache_dir:
        env["RSPAMD_HS_CACHE_DIR"] = str(hs_cache_dir)
    command = [found, "-f", "-c", str(RSPAMD_MAIN_CONFIG), f"--var=LOCAL_CONFDIR={CONFIG_DIR}",
               f"--var=DBDIR={directory / 'db'}", f"--var=RUNDIR={directory / 'run'}",
               f"--var=LOGDIR={directory / 'log'}"]
    if as_root:
        command += ["-u", "_rspamd", "-g", "_rspamd"]
    process = _spawn("rspamd", command, directory, env)
    instance = Rspamd("127.0.0.1", *instance_ports, password=password, directory=directory, process=process,
                      redis_url=redis_url, clamd=clamd, greylist_delay=greylist_delay)
    if wait:
        wait_for_rspamd(instance)
    return instance


def wait_for_rspamd(instance: Rspamd, timeout: float = START_TIMEOUT_SECONDS) -> None:
    """Until both workers answer /ping; ScannerStartError with its log if it exits or takes too long."""

    def ready() -> bool:
        import httpx

        try:
            normal = httpx.get(f"{instance.url}/ping", timeout=1).text.strip() == "pong"
            controller = httpx.get(f"{instance.controller_url}/ping", timeout=1).text.strip() == "pong"
        except httpx.HTTPError:
            return False
        return normal and controller

    _wait(instance.process, ready, "rspamd", timeout)


CLAMAV_DATABASE_DIR = Path("/var/lib/clamav")  # where Debian's freshclam keeps the signatures


@dataclass
class EmbeddedScanners:
    """What `manage.py serve` started: the settings its children get, and what to tell a person."""

    environment: dict[str, str]
    notes: list[str]
    rspamd: Rspamd | None = None
    processes: list[Process] | None = None

    def stop(self) -> None:
        for process in reversed(self.processes or []):
            stop(process)


def start_embedded(data_dir: Path, *, redis_url: str = "", dns_nameservers: list[str] | None = None,
                   clamav_database_dir: Path = CLAMAV_DATABASE_DIR, hs_cache_dir: Path | None = None) -> EmbeddedScanners:
    """A private rspamd for one machine (and a redis-server for it when there is no REDIS_URL, and
    clamd when signatures are installed). Never raises: what could not be started is in `notes`,
    and scanning is then off (an empty RSPAMD_URL), which /readyz and the console say too."""
    import secrets

    directory = data_dir / "rspamd"
    processes: list[Process] = []
    notes: list[str] = []
    try:
        if not binary(settings.RSPAMD_BINARY):
            raise ScannerStartError(f"rspamd is not installed ({settings.RSPAMD_BINARY} not found; "
                                    "scripts/install-system-deps.sh installs it)")
        if not redis_url:
            redis = start_redis(directory / "redis")
            processes.append(redis.process)
            redis_url = redis.url
        clamd = None
        if has_signatures(clamav_database_dir):
            try:
                clamd = start_clamd(directory / "clamd", clamav_database_dir)
                processes.append(clamd.process)
            except ScannerStartError as error:
                notes.append(f"Virus scanning is off: clamd did not start ({str(error).splitlines()[0]}).")
        else:
            notes.append(f"Virus scanning is off: no ClamAV signatures in {clamav_database_dir} "
                         "(install clamav-daemon and run freshclam, then restart).")
        instance = start_rspamd(directory, password=secrets.token_urlsafe(16), redis_url=redis_url,
                                dns_nameservers=dns_nameservers, clamd=clamd, hs_cache_dir=hs_cache_dir, wait=False)
        processes.append(instance.process)
    except ScannerStartError as error:
        for process in reversed(processes):
            stop(process)
        return EmbeddedScanners(
            environment={"RSPAMD_URL": "", "RSPAMD_CONTROLLER_URL": ""},
            notes=[f"Scanning is OFF: {str(error).splitlines()[0]}. Inbound mail is not checked for spam "
                   "or viruses."])
    notes.insert(0, f"Scanner: rspamd at {instance.url} (log: {instance.process.log_path})")
    return EmbeddedScanners(
        environment={"RSPAMD_URL": instance.url, "RSPAMD_CONTROLLER_URL": instance.controller_url,
                     "RSPAMD_PASSWORD": instance.password, "RSPAMD_REDIS_URL": redis_url},
        notes=notes, rspamd=instance, processes=processes)
