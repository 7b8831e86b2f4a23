"""/calendar/calendars and /contacts/address-books: the account's calendars and address books (its own
and each managed mailbox's), listed, made, renamed, recoloured and deleted. A mailbox's are the same
collections its owner sees in webmail and syncs over CalDAV/CardDAV (`dav_url`); the default one of
each (made on first use, at the address clients were set up with) cannot be deleted."""
from zoneinfo import available_timezones

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from api.inputs import StrictInput
from api.pagination import page_query
from api.permissions import request_account
from api.views.contacts import managed_mailbox
from calendars.models import COMPONENTS
from calendars.selectors import account_calendars, calendar_get
from calendars.services import calendar_create, calendar_delete, calendar_for, calendar_update
from mailcore.changelog import MAX_COLLECTIONS
from contacts.selectors import account_address_books, address_book_get
from contacts.services import address_book_create, address_book_delete, address_book_for, address_book_update
from mailcore.paging import page_window

GATE = "Plan Pro or Premium (else 403 naming the plan)."
OWNER_HELP = ("Address of one of the account's managed mailboxes: its owner sees the collection in webmail and "
              "syncs it over CalDAV/CardDAV. Without it: the account's own.")
NAME = {"max_length": 100, "help_text": "1 to 100 characters (trimmed)."}
COLOR_HELP = "#rrggbb (stored lower-cased)."
LIMIT = f"At most {MAX_COLLECTIONS} calendars (and {MAX_COLLECTIONS} address books) per mailbox, and for the account."


def _dav_url(kind: str, collection) -> str | None:
    if not collection.mailbox_id:
        return None
    return f"/dav/{kind}/{collection.mailbox.address}/{collection.slug}/"


class _OwnerQuery(page_query(default_size=50, max_size=100, name="CollectionPageQuery")):
    mailbox = serializers.EmailField(max_length=320, required=False,
                                     help_text="Only this managed mailbox's; without it every one of the account.")

    def validate_mailbox(self, value: str):
        return managed_mailbox(self.context["account"], value)


def _owner_page(request, *, key: str, output, default_for, listing) -> Response:
    """One page of the account's calendars or address books, a named mailbox's default made on first use."""
    account = request_account(request)
    query = _OwnerQuery(data=request.query_params, context={"account": account})
    query.is_valid(raise_exception=True)
    params = query.validated_data
    mailbox = params.get("mailbox")
    if mailbox is not None:
        default_for(account=account, mailbox=mailbox)
    collections = listing(account=account, mailbox=mailbox)
    page, per_page = params["page"], params["per_page"]
    return Response(output({key: page_window(collections, page=page, size=per_page),
                            "total": collections.count(), "page": page, "per_page": per_page}).data)


def _owner_create(request, *, input_class, output, create) -> Response:
    """A new calendar or address book, the account's own or a managed mailbox's."""
    account = request_account(request)
    data = input_class(data=request.data, context={"account": account})
    data.is_valid(raise_exception=True)
    fields = dict(data.validated_data)
    collection = create(account=account, mailbox=fields.pop("mailbox", None), **fields)
    return Response(output(collection).data, status=201)


class CalendarOutput(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    color = serializers.CharField(help_text=COLOR_HELP)
    timezone = serializers.CharField(help_text="IANA zone its owner sees it in; empty: UTC.")
    components = serializers.ListField(child=serializers.ChoiceField(choices=COMPONENTS),
                                       source="component_set",
                                       help_text="What it holds: VEVENT (events), VTODO (tasks). Fixed when made.")
    is_default = serializers.BooleanField(help_text="The one made first; it cannot be deleted.")
    mailbox = serializers.SerializerMethodField(help_text="The mailbox it belongs to; null: the account's own.")
    dav_url = serializers.SerializerMethodField(help_text="Its CalDAV collection (a mailbox's only).")
    created_at = serializers.DateTimeField()

    def get_mailbox(self, calendar) -> str | None:
        return calendar.mailbox.address if calendar.mailbox_id else None

    def get_dav_url(self, calendar) -> str | None:
        return _dav_url("calendars", calendar)


class CalendarPageOutput(serializers.Serializer):
    calendars = CalendarOutput(many=True)
    total = serializers.IntegerField()
    page = serializers.IntegerField()
    per_page = serializers.IntegerField()


class CalendarUpdateInput(StrictInput):
    """Changes to a calendar: only the fields sent change; any other key is a 422."""

    refused = {"components": "Fixed when the calendar is made.",
               "mailbox": "A calendar stays with its mailbox.",
               **{name: "Read-only." for name in ("id", "is_default", "dav_url", "created_at")}}

    name = serializers.CharField(required=False, **NAME)
    color = serializers.RegexField(r"^#[0-9a-fA-F]{6}\Z", max_length=7, required=False, help_text=COLOR_HELP)
    timezone = serializers.ChoiceField(
        choices=["", *sorted(available_timezones())], required=False, allow_blank=True,
        error_messages={"invalid_choice": "Not an IANA time zone name."},
        help_text="IANA zone name (e.g. Europe/Berlin); empty: UTC.")


class CalendarInput(CalendarUpdateInput):
    """A new calendar; any key not listed here is a 422."""

    refused = {name: why for name, why in CalendarUpdateInput.refused.items() if name not in ("components", "mailbox")}

    name = serializers.CharField(**NAME)
    components = serializers.ListField(
        child=serializers.ChoiceField(choices=COMPONENTS), min_length=1, max_length=2, required=False,
        help_text="What it may hold: VEVENT (events), VTODO (tasks); default both.")
    mailbox = serializers.EmailField(max_length=320, required=False, allow_null=True, help_text=OWNER_HELP)

    def validate_mailbox(self, value):
        return managed_mailbox(self.context["account"], value)


class CalendarListCreateApi(APIView):
    required_scopes = {"GET": "calendar:read", "POST": "calendar:write"}
    required_feature = "calendar"

    @extend_schema(tags=["calendar"], operation_id="calendar_calendars_list", parameters=[_OwnerQuery],
                   responses={200: CalendarPageOutput},
                   summary="List calendars (scope calendar:read)",
                   description=f"{GATE} The account's own and its mailboxes' (or one mailbox's, its default made "
                   "on first use), default first, then by name.")
    def get(self, request):
        return _owner_page(request, key="calendars", output=CalendarPageOutput, default_for=calendar_for,
                           listing=account_calendars)

    @extend_schema(tags=["calendar"], operation_id="calendar_calendars_create", request=CalendarInput,
                   responses={201: CalendarOutput, 403: OpenApiResponse(description=LIMIT)},
                   summary="Create a calendar (scope calendar:write)",
                   description=f"{GATE} {LIMIT} A mailbox's shows up in its owner's webmail and sync clients.")
    def post(self, request):
        return _owner_create(request, input_class=CalendarInput, output=CalendarOutput, create=calendar_create)


class CalendarDetailApi(APIView):
    required_scopes = {"GET": "calendar:read", "PATCH": "calendar:write", "DELETE": "calendar:write"}
    required_feature = "calendar"

    def _calendar(self, request, calendar_id: int):
        return calendar_get(account=request_account(request), calendar_id=calendar_id)

    @extend_schema(tags=["calendar"], operation_id="calendar_calendars_retrieve",
                   responses={200: CalendarOutput, 404: OpenApiResponse(description="Not yours")},
                   summary="Fetch a calendar (scope calendar:read)", description=GATE)
    def get(self, request, calendar_id: int):
        return Response(CalendarOutput(self._calendar(request, calendar_id)).data)

    @extend_schema(tags=["calendar"], operation_id="calendar_calendars_update", request=CalendarUpdateInput,
                   responses={200: CalendarOutput},
                   summary="Rename, recolour or re-zone a calendar (scope calendar:write)", description=GATE)
    def patch(self, request, calendar_id: int):
        calendar = self._calendar(request, calendar_id)
        data = CalendarUpdateInput(data=request.data)
        data.is_valid(raise_exception=True)
        if data.validated_data:
            calendar = calendar_update(calendar=calendar, **data.validated_data)
        return Response(CalendarOutput(calendar).data)

    @extend_schema(tags=["calendar"], operation_id="calendar_calendars_destroy",
                   responses={204: None, 403: OpenApiResponse(description="The default calendar stays.")},
                   summary="Delete a calendar with its events and tasks (scope calendar:write)",
                   description=f"{GATE} Its events and tasks go with it, without cancellations to attendees "
                   "(as when a sync client deletes a calendar). The default calendar cannot be deleted (403).")
    def delete(self, request, calendar_id: int):
        calendar_delete(calendar=self._calendar(request, calendar_id))
        return Response(status=204)


class AddressBookOutput(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    color = serializers.CharField(help_text=COLOR_HELP)
    is_default = serializers.BooleanField(help_text="The one made first; it cannot be deleted.")
    mailbox = serializers.SerializerMethodField(help_text="The mailbox it belongs to; null: the account's own.")
    dav_url = serializers.SerializerMethodField(help_text="Its CardDAV collection (a mailbox's only).")
    created_at = serializers.DateTimeField()

    def get_mailbox(self, book) -> str | None:
        return book.mailbox.address if book.mailbox_id else None

    def get_dav_url(self, book) -> str | None:
        return _dav_url("addressbooks", book)


class AddressBookPageOutput(serializers.Serializer):
    address_books = AddressBookOutput(many=True)
    total = serializers.IntegerField()
    page = serializers.IntegerField()
    per_page = serializers.IntegerField()


class AddressBookUpdateInput(StrictInput):
    """Changes to an address book; any other key is a 422."""

    refused = {"mailbox": "An address book stays with its mailbox.",
               **{name: "Read-only." for name in ("id", "is_default", "dav_url", "created_at")}}

    name = serializers.CharField(required=False, **NAME)
    color = serializers.RegexField(r"^#[0-9a-fA-F]{6}\Z", max_length=7, required=False, help_text=COLOR_HELP)


class AddressBookInput(AddressBookUpdateInput):
    """A new address book; any key not listed here is a 422."""

    refused = {name: why for name, why in AddressBookUpdateInput.refused.items() if name != "mailbox"}

    name = serializers.CharField(**NAME)

    mailbox = serializers.EmailField(max_length=320, required=False, allow_null=True, help_text=OWNER_HELP)

    def validate_mailbox(self, value):
        return managed_mailbox(self.context["account"], value)


class AddressBookListCreateApi(APIView):
    required_scopes = {"GET": "contacts:read", "POST": "contacts:write"}
    required_feature = "contacts"

    @extend_schema(tags=["contacts"], operation_id="contacts_address_books_list", parameters=[_OwnerQuery],
                   responses={200: AddressBookPageOutput},
                   summary="List address books (scope contacts:read)",
                   description=f"{GATE} The account's own and its mailboxes' (or one mailbox's, its default made "
                   "on first use), default first, then by name. Hosting partners' client books are not here.")
    def get(self, request):
        return _owner_page(request, key="address_books", output=AddressBookPageOutput,
                           default_for=address_book_for, listing=account_address_books)

    @extend_schema(tags=["contacts"], operation_id="contacts_address_books_create", request=AddressBookInput,
                   responses={201: AddressBookOutput, 403: OpenApiResponse(description=LIMIT)},
                   summary="Create an address book (scope contacts:write)", description=f"{GATE} {LIMIT}")
    def post(self, request):
        return _owner_create(request, input_class=AddressBookInput, output=AddressBookOutput,
                             create=address_book_create)


class AddressBookDetailApi(APIView):
    required_scopes = {"GET": "contacts:read", "PATCH": "contacts:write", "DELETE": "contacts:write"}
    required_feature = "contacts"

    def _book(self, request, book_id: int):
        return address_book_get(account=request_account(request), book_id=book_id)

    @extend_schema(tags=["contacts"], operation_id="contacts_address_books_retrieve",
                   responses={200: AddressBookOutput, 404: OpenApiResponse(description="Not yours")},
                   summary="Fetch an address book (scope contacts:read)", description=GATE)
    def get(self, request, book_id: int):
        return Response(AddressBookOutput(self._book(request, book_id)).data)

    @extend_schema(tags=["contacts"], operation_id="contacts_address_books_update", request=AddressBookUpdateInput,
                   responses={200: AddressBookOutput},
                   summary="Rename or recolour an address book (scope contacts:write)", description=GATE)
    def patch(self, request, book_id: int):
        book = self._book(request, book_id)
        data = AddressBookUpdateInput(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(AddressBookOutput(address_book_update(book=book, **data.validated_data)).data)

    @extend_schema(tags=["contacts"], operation_id="contacts_address_books_destroy",
                   responses={204: None, 403: OpenApiResponse(description="The default address book stays.")},
                   summary="Delete an address book with its contacts (scope contacts:write)",
                   description=f"{GATE} The default address book cannot be deleted (403).")
    def delete(self, request, book_id: int):
        address_book_delete(book=self._book(request, book_id))
        return Response(status=204)
