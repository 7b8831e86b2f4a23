"""Reading our own Authentication-Results header (RFC 8601) back from a stored message: the results
of SPF, DKIM, DMARC and ARC that protection wrote when the message arrived. The kernel reads it for
email.received and the inbox (the agent tools' summaries); protection.authentication builds the
owner's warning on the same reading.

Only a header whose authserv-id is ours (settings.MAIL_HOST) counts: one from outside with our id
was removed on arrival, and one with another id says what another server claims, not what we found.
"""
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.conf import settings

HEADER = "Authentication-Results"
METHODS = ("spf", "dkim", "dmarc", "arc")
RESULTS = frozenset({"pass", "fail", "softfail", "neutral", "none", "temperror", "permerror", "policy"})
_COMMENT = re.compile(r"\((?:[^()\\]|\\.)*\)")
_RESULT = re.compile(r"^([a-z0-9-]+)(?:/[0-9]+)?\s*=\s*([a-z]+)\s*(.*)$", re.IGNORECASE | re.DOTALL)
_PROPERTY = re.compile(r"([a-z0-9-]+\.[a-z0-9-]+)\s*=\s*(\"[^\"]*\"|[^\s;]+)", re.IGNORECASE)


@dataclass(frozen=True)
class MethodResult:
    """One method's result, its properties (`header.from`, `smtp.mailfrom`, `header.d`...) and the
    comment that followed the result (`p=reject` for DMARC), lowercased."""

    result: str
    properties: dict[str, str] = field(default_factory=dict)
    comment: str = ""


@dataclass(frozen=True)
class AuthenticationResults:
    """Our Authentication-Results, by method (the first result of each; a method not reported is absent)."""

    methods: dict[str, MethodResult]

    def result(self, method: str) -> str:
        found = self.methods.get(method)
        return found.result if found else "none"

    def summary(self) -> dict[str, str]:
        """{spf, dkim, dmarc, arc}: each RFC 8601 result, "none" for one not reported."""
        return {method: self.result(method) for method in METHODS}


def _unquoted(value: str) -> str:
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value


def parse(value: str) -> tuple[str, AuthenticationResults]:
    """The authserv-id of one header value and its results; never raises on a malformed header."""
    unfolded = " ".join(value.split())
    authserv, _, rest = unfolded.partition(";")
    authserv_id = _unquoted(_COMMENT.sub("", authserv).strip().split(" ")[0]).lower() if authserv.strip() else ""
    methods: dict[str, MethodResult] = {}
    for resinfo in rest.split(";"):
        comments = [comment[1:-1].strip().lower() for comment in _COMMENT.findall(resinfo)]
        matched = _RESULT.match(_COMMENT.sub(" ", resinfo).strip())
        if not matched:
            continue
        method, result, tail = matched.group(1).lower(), matched.group(2).lower(), matched.group(3)
        if method in methods or result not in RESULTS:
            continue
        properties = {name.lower(): _unquoted(found).lower() for name, found in _PROPERTY.findall(tail)}
        methods[method] = MethodResult(result, properties, comments[0] if comments else "")
    return authserv_id, AuthenticationResults(methods)


def ours(values: Iterable[str], *, authserv_id: str | None = None) -> AuthenticationResults | None:
    """The first header value with our authserv-id, read; None when the message carries none (it was
    sent from here, or arrived while scanning was off)."""
    wanted = (authserv_id or settings.MAIL_HOST).lower()
    for value in values:
        found_id, results = parse(str(value))
        if found_id == wanted:
            return results
    return None


def authentication_summary(values: Iterable[str]) -> dict[str, str] | None:
    """`authentication` of the REST message and email.received: {spf, dkim, dmarc, arc} or None."""
    results = ours(values)
    return None if results is None else results.summary()
