"""/contacts: the account's contacts (plan Pro or Premium). Reading needs `contacts:read`, changing
`contacts:write`. A contact lives in the account's own address book (`mailbox` null) or in the book
of one of its managed mailboxes (the one its owner sees in webmail and on the phone)."""
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from api.inputs import StrictInput
from api.pagination import page_query
from api.permissions import request_account
from contacts.models import AddressBook
from contacts.selectors import address_book_get, contact_get, contact_list
from contacts.services import address_book_for, contact_create, contact_delete, contact_update
from mailcore.mailboxes.models import Mailbox
from mailcore.mailboxes.selectors import mailbox_get_by_address
from mailcore.paging import page_window

MAX_GROUPS = 50
MAX_NOTES = 10_000
MAILBOX_HELP = ("Address of one of the account's managed mailboxes: the record goes to (or is listed from) that "
                "mailbox's own book, which its owner sees in webmail and syncs over CardDAV/CalDAV. Without it: "
                "the account's own book.")


def managed_mailbox(account, address: str | None) -> Mailbox | None:
    """The account's managed mailbox with this address (None for none given); ValidationError otherwise."""
    if address in (None, ""):
        return None
    try:
        mailbox = mailbox_get_by_address(account=account, address=address)
    except Mailbox.DoesNotExist:
        mailbox = None
    if mailbox is None or not mailbox.is_managed:
        raise serializers.ValidationError("Not a managed mailbox of this account.")
    return mailbox


class ContactUpdateInput(StrictInput):
    """Changes to a contact: only the fields sent change; any other key is a 422."""

    refused = {"mailbox": "A contact stays in its address book; delete it and create it in the other.",
               "id": "Read-only.", "uid": "Read-only.", "created_at": "Read-only.", "updated_at": "Read-only."}

    name = serializers.CharField(max_length=255, required=False)
    email = serializers.EmailField(max_length=320, required=False, help_text="Stored lower-cased.")
    phone = serializers.CharField(max_length=64, required=False, allow_blank=True)
    company = serializers.CharField(max_length=255, required=False, allow_blank=True)
    notes = serializers.CharField(max_length=MAX_NOTES, required=False, allow_blank=True, trim_whitespace=False)
    groups = serializers.ListField(
        child=serializers.CharField(max_length=100), max_length=MAX_GROUPS, required=False,
        help_text="Names of the contact's groups in its book (a group is made on first use); replaces the list.")

    def validate_email(self, value: str) -> str:
        return value.lower()

    def validate_groups(self, value: list[str]) -> list[str]:
        return list(dict.fromkeys(name.strip() for name in value))


class ContactInput(ContactUpdateInput):
    """A new contact; any key not listed here is a 422."""

    refused = {name: why for name, why in ContactUpdateInput.refused.items() if name != "mailbox"}

    name = serializers.CharField(max_length=255)
    email = serializers.EmailField(max_length=320, help_text="Stored lower-cased.")
    mailbox = serializers.EmailField(max_length=320, required=False, allow_null=True, help_text=MAILBOX_HELP)
    address_book_id = serializers.IntegerField(
        required=False, help_text="The address book to put it in (see /contacts/address-books); without it the "
        "default book of `mailbox` (or the account). Not with mailbox.")

    def validate_mailbox(self, value: str | None) -> Mailbox | None:
        return managed_mailbox(self.context["account"], value)

    def validate_address_book_id(self, value: int) -> AddressBook:
        try:
            return address_book_get(account=self.context["account"], book_id=value)
        except AddressBook.DoesNotExist:
            raise serializers.ValidationError("Not an address book of this account.") from None

    def validate(self, attrs):
        if "address_book_id" in attrs and attrs.get("mailbox") is not None:
            raise serializers.ValidationError({"mailbox": ["Give address_book_id or mailbox, not both."]})
        return attrs


class ContactOutput(serializers.Serializer):
    id = serializers.IntegerField()
    uid = serializers.CharField(help_text="The vCard UID (stable; what CardDAV clients see).")
    name = serializers.CharField()
    email = serializers.EmailField()
    phone = serializers.CharField()
    company = serializers.CharField()
    notes = serializers.CharField()
    groups = serializers.SerializerMethodField()
    mailbox = serializers.SerializerMethodField(help_text="The mailbox whose book holds it; null: the account's own.")
    address_book_id = serializers.IntegerField(source="book_id")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def get_groups(self, contact) -> list[str]:
        return [group.name for group in contact.groups.all()]

    def get_mailbox(self, contact) -> str | None:
        return contact.book.mailbox.address if contact.book.mailbox_id else None


class ContactPageOutput(serializers.Serializer):
    contacts = ContactOutput(many=True)
    total = serializers.IntegerField()
    page = serializers.IntegerField()
    per_page = serializers.IntegerField()


class ContactListQuery(page_query(default_size=50, max_size=100, name="ContactPageQuery")):
    search = serializers.CharField(max_length=200, required=False, allow_blank=True,
                                   help_text="Words that must each occur in the name, email or company (any case).")
    mailbox = serializers.EmailField(max_length=320, required=False,
                                     help_text="Only this managed mailbox's book; without it every book of the "
                                     "account.")

    def validate_mailbox(self, value: str) -> Mailbox | None:
        return managed_mailbox(self.context["account"], value)


READ_WRITE = {"GET": "contacts:read", "POST": "contacts:write", "PATCH": "contacts:write",
              "DELETE": "contacts:write"}
GATE = "Plan Pro or Premium (else 403 naming the plan)."


class ContactListCreateApi(APIView):
    required_scopes = READ_WRITE
    required_feature = "contacts"

    @extend_schema(tags=["contacts"], operation_id="contacts_list", parameters=[ContactListQuery],
                   responses={200: ContactPageOutput},
                   summary="List contacts, by name (scope contacts:read)",
                   description=f"{GATE} Every book of the account (its own and its mailboxes'), or one mailbox's.")
    def get(self, request):
        account = request_account(request)
        query = ContactListQuery(data=request.query_params, context={"account": account})
        query.is_valid(raise_exception=True)
        params = query.validated_data
        mailbox = params.get("mailbox")
        contacts = contact_list(account=account, mailbox=mailbox, search=params.get("search", ""))
        page, per_page = params["page"], params["per_page"]
        rows = page_window(contacts.prefetch_related("groups"), page=page, size=per_page)
        return Response(ContactPageOutput(
            {"contacts": rows, "total": contacts.count(), "page": page, "per_page": per_page}).data)

    @extend_schema(tags=["contacts"], request=ContactInput, responses={201: ContactOutput},
                   summary="Create a contact (scope contacts:write)", description=GATE)
    def post(self, request):
        account = request_account(request)
        data = ContactInput(data=request.data, context={"account": account})
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        book = fields.pop("address_book_id", None) or address_book_for(account=account,
                                                                        mailbox=fields.pop("mailbox", None))
        fields.pop("mailbox", None)
        return Response(ContactOutput(contact_create(book=book, **fields)).data, status=201)


class ContactDetailApi(APIView):
    required_scopes = READ_WRITE
    required_feature = "contacts"

    def _contact(self, request, contact_id: int):
        return contact_get(account=request_account(request), contact_id=contact_id)

    @extend_schema(tags=["contacts"], responses={200: ContactOutput, 404: OpenApiResponse(description="Not yours")},
                   summary="Fetch a contact (scope contacts:read)", description=GATE)
    def get(self, request, contact_id: int):
        return Response(ContactOutput(self._contact(request, contact_id)).data)

    @extend_schema(tags=["contacts"], request=ContactUpdateInput, responses={200: ContactOutput},
                   summary="Change a contact (scope contacts:write)",
                   description=f"{GATE} Only the fields sent change; the rest of its vCard is kept.")
    def patch(self, request, contact_id: int):
        contact = self._contact(request, contact_id)
        data = ContactUpdateInput(data=request.data)
        data.is_valid(raise_exception=True)
        if data.validated_data:  # an empty body changes nothing (no new ETag for sync clients)
            contact = contact_update(contact=contact, **data.validated_data)
        return Response(ContactOutput(contact).data)

    @extend_schema(tags=["contacts"], responses={204: None}, summary="Delete a contact for good (scope contacts:write)",
                   description=GATE)
    def delete(self, request, contact_id: int):
        contact_delete(contact=self._contact(request, contact_id))
        return Response(status=204)
