"""Outbound mail: handing messages to the next hop (the SMTP relay, or locally in embedded mode)."""
