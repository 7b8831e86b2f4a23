"""Inbound mail: the LMTP/SMTP listener, recipient resolution, threading and delivery into the store."""
