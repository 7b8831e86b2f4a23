"""Writes about money: how each thing is paid for, decided here and handed to mailcore's
funding-neutral services (grant slots, create a funded mailbox, enable or disable one)."""
