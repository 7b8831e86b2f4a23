"""What the owner's and the partner's sender-rule pages share (components/sender_rules.html)."""
from protection.models import SenderRule


def sender_lists(rules: list[SenderRule]) -> list[tuple[str, list[SenderRule], str]]:
    """(heading, rules, test id) for the allowed and the blocked senders, in that order."""
    return [("Always let in", [rule for rule in rules if rule.kind == SenderRule.Kind.ALLOW], "allowed-senders"),
            ("Always refused", [rule for rule in rules if rule.kind == SenderRule.Kind.BLOCK],
             "blocked-senders")]
