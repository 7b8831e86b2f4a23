"""Payment providers behind one interface (`base.PaymentProvider`): local, stripe, paystack.

A provider creates checkouts, reports their state, verifies and parses its signed webhooks into one
normalised `ProviderEvent`, and cancels, changes or refunds. It never changes our tables: every
money change is applied by `billing.services.events.provider_event_apply` from such a verified event.
"""
