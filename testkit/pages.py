"""What every HTML page must carry, checked by the page walks (test_page_headers, the stranger matrix)."""
import re


def policy_problems(response) -> list[str]:
    """What is missing from an HTML page's headers: a script policy without inline script or eval,
    and a refusal to be framed. Empty when all is well."""
    policy = response.get("Content-Security-Policy", "")
    scripts = (re.search(r"(?:^|;)\s*script-src ([^;]*)", policy)
               or re.search(r"(?:^|;)\s*default-src ([^;]*)", policy))
    problems = []
    if not scripts:
        problems.append(f"no script policy in {policy!r}")
    elif "'unsafe-inline'" in scripts.group(1) or "'unsafe-eval'" in scripts.group(1):
        problems.append(f"inline script or eval allowed: {scripts.group(1)!r}")
    if "frame-ancestors 'none'" not in policy and response.get("X-Frame-Options") != "DENY":
        problems.append("may be framed")
    return problems
