"""factory_boy factories for the mail domain."""
import factory
from allauth.account.models import EmailAddress

from mailcore.accounts.models import Account, Plan, User

PASSWORD = "correct horse battery"


class AccountFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Account

    class Params:
        plan_code = "free"

    name = factory.Sequence(lambda n: f"Account {n}")
    plan = factory.LazyAttribute(lambda o: Plan.objects.get(code=o.plan_code))


class UserFactory(factory.django.DjangoModelFactory):
    """A person with a verified email address and the password PASSWORD."""

    class Meta:
        model = User
        skip_postgeneration_save = True

    email = factory.Sequence(lambda n: f"user{n}@example.test")
    account = factory.SubFactory(AccountFactory)
    password = factory.django.Password(PASSWORD)

    @factory.post_generation
    def verified(user, create, extracted, **kwargs):
        if create and extracted is not False:
            EmailAddress.objects.create(user=user, email=user.email, verified=True, primary=True)


def make_domain(account, name: str = "example.test"):
    from mailcore.domains.services import domain_create, domain_mark_verified

    return domain_mark_verified(domain=domain_create(account=account, name=name))


def make_mailbox(account, address: str = "inbox@example.test", password: str = "mailbox-password-1", **options):
    """A managed mailbox on a verified domain of the account (the domain is created if needed)."""
    from mailcore.domains.models import Domain
    from mailcore.mailboxes.services import mailbox_create

    local_part, domain_name = address.split("@")
    domain = Domain.objects.filter(name=domain_name).first() or make_domain(account, domain_name)
    return mailbox_create(domain=domain, local_part=local_part, password=password, **options)


def make_message(subject: str = "Hello", body: str = "Just saying hi.", *, sender: str = "Ann <ann@elsewhere.test>",
                 to: str = "inbox@example.test", html: str | None = None, attachments=(), headers=None) -> bytes:
    """A well-formed RFC 5322 message as bytes."""
    from email.message import EmailMessage
    from email.utils import format_datetime, make_msgid

    from django.utils import timezone

    message = EmailMessage()
    message["From"] = sender
    message["To"] = to
    message["Subject"] = subject
    message["Date"] = format_datetime(timezone.now())
    message["Message-ID"] = make_msgid(domain="elsewhere.test")
    for name, value in (headers or {}).items():
        message[name] = value
    message.set_content(body)
    if html is not None:
        message.add_alternative(html, subtype="html")
    for filename, content_type, payload in attachments:
        maintype, subtype = content_type.split("/")
        message.add_attachment(payload, maintype=maintype, subtype=subtype, filename=filename)
    return message.as_bytes()


def client_message(sender: str, subject: str = "Hello", *, to: str = "reader@elsewhere.test", body: str = "Hi.",
                   headers: str = "") -> bytes:
    """A message as a mail client submits it: without Date or Message-ID unless `headers` (raw
    header lines, CRLF-terminated) brings them, so the server's additions show."""
    return (f"From: {sender}\r\nTo: {to}\r\nSubject: {subject}\r\n{headers}MIME-Version: 1.0\r\n"
            f"Content-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n").encode()
