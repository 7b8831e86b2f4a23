"""Known vulnerabilities in the pinned requirements, from PyPI's advisory data (the OSV database PyPI
publishes with each release). `make test` runs it first; a pin with a known vulnerability fails it
unless AUDIT_IGNORED below names the advisory with the reason it does not apply.

pip-audit is the tool for this where it can reach a vulnerability service; on these machines it
cannot: api.osv.dev does not resolve and the PyPI mirror does not serve the
per-release JSON pip-audit reads. The project JSON it does serve lists the advisories of the newest
release, so a pin that is the newest release is checked from there; an older pin is checked from
the per-release JSON where that is served, and is otherwise listed as not checked."""
import json
import re
import sys
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ["requirements.txt", "requirements-test.txt", "api/tests/mcp_clients/requirements-sdk1.txt"]
PYPI = "https://pypi.org/pypi"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;#]+)")

# advisory id -> why it does not apply to Mailwell (reviewed by a person; keep it short and true)
AUDIT_IGNORED: dict[str, str] = {}


def pins() -> list[tuple[str, str]]:
    found = set()
    for name in REQUIREMENTS:
        for line in (ROOT / name).read_text().splitlines():
            match = PIN.match(line.strip())
            if match:
                found.add((match.group(1).lower(), match.group(2)))
    return sorted(found)


def _json(url: str) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise


def advisories(name: str, version: str) -> list[dict] | None:
    """The advisories PyPI lists for this release, or None when it cannot be told from here."""
    release = _json(f"{PYPI}/{name}/{version}/json")
    if release is not None:
        return release.get("vulnerabilities") or []
    project = _json(f"{PYPI}/{name}/json")
    if project is not None and project["info"]["version"] == version:
        return project.get("vulnerabilities") or []
    return None


def main() -> int:
    pinned = pins()
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda pin: (pin, advisories(*pin)), pinned))
    vulnerable, unchecked = [], []
    for (name, version), found in results:
        if found is None:
            unchecked.append(f"{name}=={version}")
        for advisory in found or []:
            if advisory["id"] not in AUDIT_IGNORED:
                fixed = ", ".join(advisory.get("fixed_in") or []) or "no fixed release"
                vulnerable.append(f"{name}=={version}: {advisory['id']} ({', '.join(advisory.get('aliases') or [])})"
                                  f" fixed in {fixed}: {advisory.get('summary') or advisory.get('details', '')[:120]}")
    print(f"audit: {len(pinned) - len(unchecked)} of {len(pinned)} pins checked against PyPI's advisories, "
          f"{len(vulnerable)} known vulnerabilities")
    if unchecked:
        print("audit: not checkable from here (not the newest release, no per-release JSON): " + ", ".join(unchecked))
    for line in vulnerable:
        print("audit: VULNERABLE " + line)
    return 1 if vulnerable else 0


if __name__ == "__main__":
    sys.exit(main())
