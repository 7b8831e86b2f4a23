"""A real clamd for the tests, reading a signature database the suite writes itself: one
signature, the EICAR test file's (protection/local_scanners.py), so nothing is downloaded.
rspamd's antivirus module asks it (testkit/rspamd.py)."""
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from protection.local_scanners import (EICAR, EICAR_SIGNATURE_NAME, Clamd, ScannerStartError, start_clamd, stop,
                                       write_eicar_database)

__all__ = ["EICAR", "EICAR_SIGNATURE_NAME", "clamd"]


@pytest.fixture(scope="session")
def clamd() -> Iterator[Clamd]:
    directory = Path(tempfile.mkdtemp(prefix="mailwell-clamd-"))
    database_dir = directory / "signatures"
    write_eicar_database(database_dir)
    try:
        instance = start_clamd(directory, database_dir)
    except ScannerStartError as error:
        shutil.rmtree(directory, ignore_errors=True)
        pytest.fail(f"clamd did not start: {error}\nInstall it with scripts/install-system-deps.sh.", pytrace=False)
    try:
        yield instance
    finally:
        stop(instance.process)
        shutil.rmtree(directory, ignore_errors=True)
