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
