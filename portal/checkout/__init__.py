"""The local payment provider's hosted pages (it plays Stripe's or Paystack's checkout in-process),
and where the portal lets a form's answer send the browser on to a provider."""
