"""Every package's tests run: pytest's testpaths name each top-level package that holds tests, so a
new app's `tests/` folder is never left out of `make test` without anyone noticing."""
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOT_PACKAGES = {"var", "node_modules", "staticfiles"}


def test_every_package_with_tests_is_collected():
    testpaths = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["testpaths"]
    holding_tests = {folder.name for folder in ROOT.iterdir()
                     if folder.is_dir() and not folder.name.startswith(".") and folder.name not in NOT_PACKAGES
                     and next(folder.rglob("test_*.py"), None) is not None}
    assert holding_tests - set(testpaths) == set()
    assert {"contacts", "calendars", "campaigns", "webmail", "mailcore"} <= holding_tests
