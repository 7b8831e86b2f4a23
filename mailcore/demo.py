"""The demo data `make run` seeds (`manage.py seed_demo`): the kernel makes the accounts, mailboxes
and mail; each feature app adds its own samples to the demo mailbox through this hook, registered in
its AppConfig.ready() and called with mailbox= (only into empty collections, so re-seeding adds none)."""
from mailcore.hooks import Hook

demo_mailbox_seeded = Hook("demo_mailbox_seeded")
