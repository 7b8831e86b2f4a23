"""The demo mailbox's sample contacts (mailcore.demo), once: only into an empty address book."""
from contacts.services import address_book_for, contact_create
from mailcore.mailboxes.models import Mailbox


def demo_contacts_seed(*, mailbox: Mailbox) -> None:
    book = address_book_for(account=mailbox.account, mailbox=mailbox)
    if not book.contacts.exists():
        contact_create(book=book, name="Amy Baker", email="amy@acme-bakery.test", company="Acme Bakery",
                       phone="+1 555 0142", groups=["Suppliers"])
        contact_create(book=book, name="Ben Okafor", email="ben@okafor-farms.test", company="Okafor Farms",
                       groups=["Suppliers"])
        contact_create(book=book, name="Chioma Eze", email="chioma@example.test", notes="Met at the fair.")
