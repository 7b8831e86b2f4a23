"""A campaign's numbers, in total, per step and per A/B variant, counted from its enrolments and
delivery rows in three queries whatever its size (the partner API's /stats and the portal's charts).

What each count means: `enrolled` (campaign) contacts enrolled once at send; `enrolled` (step)
contacts that reached the step (a delivery row exists, due or not); `pending` waiting for its due
time; `sent` handed to the sending path; `skipped` never sent (stopped, suppressed or cancelled);
`failed` refused for good; and, among the sent, those later seen `delivered` (accepted by the relay
and not bounced since), `bounced`, `opened`,
`clicked`, `unsubscribed` or `complained` (each set once per delivery by the event that shows it).
`opened` is approximate: it counts tracking-pixel loads, which image proxies (Gmail, Apple Mail
Privacy Protection) fetch on delivery whether or not a person reads the mail, while clients that
block images never load it. A variant is chosen when a delivery is sent, so variants count sent
mail and what became of it; a step without subject_b has only variant a."""
from django.db.models import Count, Q

from campaigns.models import Campaign, Enrollment, StepDelivery

OUTCOMES = ("delivered", "bounced", "opened", "clicked", "unsubscribed", "complained")
STATES = ("pending", "sent", "skipped", "failed")
VARIANTS = ("a", "b")


def _zero(names) -> dict[str, int]:
    return dict.fromkeys(names, 0)


def _add(into: dict, row: dict) -> None:
    for name, value in row.items():
        into[name] += value


def campaign_stats(campaign: Campaign) -> dict:
    """Totals, per step (in order) and per variant; `opened_approximate` is always true (see the module)."""
    people = Enrollment.objects.filter(campaign=campaign).aggregate(
        enrolled=Count("id"), **{status: Count("id", filter=Q(status=status)) for status in Enrollment.Status.values})
    rows = (StepDelivery.objects.filter(enrollment__campaign=campaign).values("step_id", "variant")
            .annotate(rows=Count("id"),
                      **{state: Count("id", filter=Q(status=state)) for state in STATES},
                      **{outcome: Count(f"{outcome}_at") for outcome in OUTCOMES if outcome != "delivered"},
                      # accepted by the relay and not bounced later (a bounce can follow acceptance)
                      delivered=Count("id", filter=Q(delivered_at__isnull=False, bounced_at__isnull=True)))
            .order_by())
    steps = list(campaign.steps.order_by("position").values("id", "position", "subject", "subject_b",
                                                          "ab_split_percent"))
    per_step = {step["id"]: {"step_id": step["id"], "position": step["position"], "subject": step["subject"],
                             "subject_b": step["subject_b"], "ab_split_percent": step["ab_split_percent"],
                             "enrolled": 0, **_zero(STATES), **_zero(OUTCOMES),
                             "variants": {variant: {"subject": step["subject_b"] if variant == "b" else step["subject"],
                                                    "sent": 0, **_zero(OUTCOMES)}
                                          for variant in (VARIANTS if step["subject_b"] else ("a",))}}
                for step in steps}
    totals = {"enrolled": people["enrolled"], "active": people["active"], "completed": people["completed"],
              "stopped": people["stopped"], **_zero(STATES), **_zero(OUTCOMES)}
    for row in rows:
        step = per_step.get(row["step_id"])
        if step is None:
            continue
        step["enrolled"] += row["rows"]
        for name in (*STATES, *OUTCOMES):
            step[name] += row[name]
            totals[name] += row[name]
        if row["variant"]:
            variant = step["variants"].setdefault(row["variant"], {"subject": "", "sent": 0, **_zero(OUTCOMES)})
            _add(variant, {"sent": row["sent"], **{name: row[name] for name in OUTCOMES}})
    return {"campaign_id": campaign.pk, "status": campaign.status, "opened_approximate": True,
            "totals": totals, "steps": list(per_step.values())}
