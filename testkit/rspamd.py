"""A real rspamd for the tests, started once per session from docker/rspamd/ (the production
configuration) on free loopback ports, as Dovecot and Postfix are.

Its instance values: a private redis-server (Bayes per mailbox, fuzzy hashes, greylisting; emptied
by nothing, so tests use their own mailbox addresses as Bayes scopes), clamd with the suite's EICAR
signature (testkit/clamd.py), every DNS look-up (SPF, DKIM keys, DMARC, RBLs) sent to the suite's
loopback DNS server (testkit/dns_server.py: unknown names are NXDOMAIN, so RBLs stay quiet), a
greylisting delay of GREYLIST_DELAY_SECONDS, and Bayes scoring after BAYES_MIN_LEARNS of each class.

`rspamd_settings` points the app at it (RSPAMD_URL, RSPAMD_CONTROLLER_URL, RSPAMD_PASSWORD,
RSPAMD_REDIS_URL, DNS_NAMESERVERS through `dns_zone`); without it, tests run with scanning off.

The session's state is shared by every test: greylisting remembers an (IP network, sender,
recipient) and a message body for the session, and answers "soft reject" to a suspicious message
(score >= 4) the first time and to any retry within GREYLIST_DELAY_SECONDS ("too early", with no
other symbols); rspamd's SPF cache keeps a domain's record for minutes. So a test uses recipients,
bodies and sender domains of its own (a uuid), as protection/tests/test_rspamd.py does.
"""
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from protection.local_scanners import Clamd, Rspamd, ScannerStartError, start_redis, start_rspamd, stop

GREYLIST_DELAY_SECONDS = 2
BAYES_MIN_LEARNS = 3
# Compiled Hyperscan databases shared by the sessions on this machine: a start takes about a
# second with them instead of a dozen.
HS_CACHE_DIR = Path(tempfile.gettempdir()) / "mailwell-rspamd-hs-cache"

GTUBE = "XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X"


def start_test_rspamd(*, dns_port: int, clamd: Clamd | None) -> Rspamd:
    directory = Path(tempfile.mkdtemp(prefix="mailwell-rspamd-"))
    directory.chmod(0o755)
    redis = None
    try:
        redis = start_redis(directory / "redis")
        instance = start_rspamd(directory, password=secrets.token_urlsafe(16), redis_url=redis.url,
                                dns_nameservers=[f"127.0.0.1:{dns_port}"], clamd=clamd,
                                greylist_delay=f"{GREYLIST_DELAY_SECONDS}s", bayes_min_learns=BAYES_MIN_LEARNS,
                                hs_cache_dir=HS_CACHE_DIR)
    except ScannerStartError as error:
        stop(redis.process if redis else None)
        shutil.rmtree(directory, ignore_errors=True)
        pytest.fail(f"rspamd did not start: {error}\nInstall it with scripts/install-system-deps.sh.",
                    pytrace=False)
    instance.redis = redis
    return instance


def stop_test_rspamd(instance: Rspamd) -> None:
    stop(instance.process)
    stop(instance.redis.process if instance.redis else None)
    shutil.rmtree(instance.directory, ignore_errors=True)


@pytest.fixture(scope="session")
def rspamd(_dns_server, clamd) -> Iterator[Rspamd]:
    """The session's rspamd, with clamd behind its antivirus module."""
    _zone, port = _dns_server
    instance = start_test_rspamd(dns_port=port, clamd=clamd)
    try:
        yield instance
    finally:
        stop_test_rspamd(instance)


@pytest.fixture
def rspamd_settings(settings, rspamd: Rspamd, dns_zone) -> Rspamd:
    """Scanning on for this test: the app talks to the session's rspamd, and both resolve names
    through the loopback DNS server (`dns_zone`, emptied for the test)."""
    settings.RSPAMD_URL = rspamd.url
    settings.RSPAMD_CONTROLLER_URL = rspamd.controller_url
    settings.RSPAMD_PASSWORD = rspamd.password
    settings.RSPAMD_REDIS_URL = rspamd.redis_url
    return rspamd
