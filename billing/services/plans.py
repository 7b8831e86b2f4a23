"""Account plans (Free, Pro, Premium) through a monthly subscription.

Free to a paid plan: a subscription checkout. Between paid plans: the provider changes the
subscription's price. To Free: the subscription is canceled at the period end. In every case the
plan changes only when the provider's event says so (`billing.services.events`).
"""

from billing.models import Purchase, Subscription
from billing.providers.registry import provider_named
from billing.selectors.prices import price
from billing.services.purchases import purchase_start
from mailcore.accounts.models import Account, Plan
from mailcore.errors import DomainError, ErrorCode, InvalidFields

PAID_PLANS = ("pro", "premium")


class SamePlan(DomainError):
    code = ErrorCode.INVALID


class NoSubscription(DomainError):
    code = ErrorCode.INVALID


def plan_subscription(account: Account) -> Subscription | None:
    return Subscription.objects.filter(account=account, purchase__kind=Purchase.Kind.PLAN, status__in=[
        Subscription.Status.ACTIVE, Subscription.Status.PAST_DUE]).order_by("-created_at").first()


def plan_change(*, account: Account, plan_code: str, return_url: str = "", currency: str = "usd") -> Purchase | None:
    """Start the change to `plan_code`; returns the pending purchase when a checkout is needed."""
    if not Plan.objects.filter(code=plan_code).exists():
        raise InvalidFields({"plan": ["free, pro or premium"]})
    subscription = plan_subscription(account)
    current = subscription.plan_code if subscription else account.plan.code
    if plan_code == current and not (subscription and subscription.cancel_at_period_end):
        raise SamePlan(f"the account is already on the {plan_code} plan")
    if plan_code == "free":
        if subscription is None:
            raise NoSubscription(f"the {current} plan was set by an operator, not paid by subscription; "
                                 "ask support to change it")
        provider_named(subscription.provider).subscription_cancel(subscription.provider_ref, at_period_end=True)
        return None
    if subscription is None:
        plan = Plan.objects.get(code=plan_code)
        return purchase_start(account=account, kind=Purchase.Kind.PLAN, item=plan_code, price_item=f"plan:{plan_code}",
                              quantity=1, currency=currency, return_url=return_url, recurring=True,
                              description=f"Mailwell {plan.name} plan, monthly")
    amount = price(f"plan:{plan_code}", subscription.currency)
    provider_named(subscription.provider).subscription_change(
        subscription.provider_ref, product=f"plan:{plan_code}", unit_amount_minor=amount.minor,
        description=f"Mailwell {Plan.objects.get(code=plan_code).name} plan, monthly")
    return None
