"""Billing's tables: checkouts, subscriptions, add-on purchases, the partner ledger and payouts
(amounts as integer minor units plus currency). None exist yet; the billing issue adds them here."""
