"""The policy advisor: when a domain can move from p=none to quarantine, and then to reject.

The rule (said on the dashboard and in docs/deliverability.md): over the last 30 days, reports on at
least MIN_DAYS different days, at least ALIGNED_PERCENT of the reported messages DMARC-aligned, and
none of our servers failing. Then p=none may become p=quarantine; once reports show p=quarantine on
MIN_DAYS days with the same figures, p=reject."""
from dataclasses import dataclass

from trust.selectors import DmarcSummary

MIN_DAYS = 14
ALIGNED_PERCENT = 98.0


@dataclass(frozen=True)
class Advice:
    stage: str  # collecting, fix_sources, quarantine, wait_quarantine, reject, done
    policy: str  # the p= to publish now
    text: str


RULE = (f"A stricter policy is safe after at least {MIN_DAYS} days of reports in the last 30 days, with at least "
        f"{ALIGNED_PERCENT:g}% of the reported messages passing DMARC and none of our servers failing: first "
        f"p=quarantine, then p=reject once reports have shown p=quarantine for {MIN_DAYS} days.")


def policy_advice(summary: DmarcSummary) -> Advice:
    current = summary.published_policy or "none"
    if summary.days_reported < MIN_DAYS:
        return Advice("collecting", current, f"Keep p={current}: reports arrived on {summary.days_reported} of the "
                                              f"{MIN_DAYS} days needed before a stricter policy can be judged.")
    failing = summary.failing_our_sources
    if failing or summary.aligned_percent < ALIGNED_PERCENT:
        why = (f"{len(failing)} of our servers fail DMARC" if failing else
               f"only {summary.aligned_percent:g}% of messages pass DMARC (at least {ALIGNED_PERCENT:g}% needed)")
        return Advice("fix_sources", current, f"Keep p={current}: {why}. Check the failing sources below: a "
                                              "legitimate sender must sign with the domain's DKIM key or be in its "
                                              "SPF record.")
    if current == "none":
        return Advice("quarantine", "quarantine", "Safe to publish p=quarantine: failing mail goes to spam folders "
                                                  "instead of inboxes.")
    if current == "quarantine":
        days = summary.days_reported_at.get("quarantine", 0)
        if days < MIN_DAYS:
            return Advice("wait_quarantine", "quarantine", f"Keep p=quarantine: reports have shown it on {days} of the "
                                                           f"{MIN_DAYS} days needed before p=reject.")
        return Advice("reject", "reject", "Safe to publish p=reject: receivers will refuse mail that fails DMARC.")
    return Advice("done", current, f"p={current} is published: the strictest policy. Keep watching the alerts.")
