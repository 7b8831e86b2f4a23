"""/v1/hosting/mailboxes/{id}/contacts: the contacts and groups of the client that owns the mailbox's
domain (one book per client, shared by all its mailboxes and its campaigns), and CSV import/export.
Reading needs `partner:mailboxes:read`, changing `partner:mailboxes:write`; the mailbox's plan must
include contacts (403 naming the plan). Another partner's mailbox, or a contact or group outside
the client's book, is 404."""
from django.db.models import Count
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import exceptions, serializers
from rest_framework.parsers import BaseParser, JSONParser
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response

from api.hosting.access import HostingApi
from api.hosting.views import MAILBOXES
from api.inputs import StrictInput
from api.pagination import page_query
from mailcore.accounts.selectors import plan_gate_message
from contacts import csv_io
from contacts.models import AddressBook, Contact, ContactGroup
from contacts.selectors import book_group_get, contact_search
from contacts.services import (
    client_address_book, contact_address_free, contact_create, contact_delete, contact_update, group_create,
    group_delete,
)
from mailcore.errors import DomainError, ErrorCode
from imports.models import ImportJob
from imports.selectors import import_job_of_book
from imports.services import INLINE_MAX_ITEMS, contacts_csv_import_start
from mailcore.partners.models import PartnerMailbox
from mailcore.partners.selectors import partner_mailbox_get
from mailcore.paging import page_window

TAG = "hosting: contacts"
MAX_NOTES = 10_000
GATE = ("The mailbox's plan must include contacts (else 403 naming the plan). Contacts belong to the client that owns "
        "the mailbox's domain: every mailbox of that client sees the same contacts and groups. 404: not your mailbox, "
        "or a contact or group of another client. 409: the mailbox's domain has no client.")


class NoClient(DomainError):
    code = ErrorCode.CONFLICT


class ClientBookApi(HostingApi):
    """A mailbox-scoped view over its client's book, behind the mailbox plan's `feature`."""

    required_scopes = MAILBOXES
    feature = "contacts"

    def partner_mailbox(self, mailbox_id: int) -> PartnerMailbox:
        partner_mailbox = partner_mailbox_get(partner=self.partner, mailbox_id=mailbox_id)
        plan = partner_mailbox.mailbox.effective_plan
        if not plan.has_feature(self.feature):
            raise exceptions.PermissionDenied(f"{plan_gate_message(self.feature)} This mailbox is on the "
                                              f"{plan.name} plan.")
        return partner_mailbox

    def book(self, mailbox_id: int) -> AddressBook:
        return self.client_book(self.partner_mailbox(mailbox_id))

    @staticmethod
    def client_book(partner_mailbox: PartnerMailbox) -> AddressBook:
        client = partner_mailbox.mailbox.domain.client
        if client is None:
            raise NoClient("This mailbox's domain belongs to no client, and contacts belong to a client; "
                           "claim the domain for a client first.")
        return client_address_book(client=client)


def group_of(book: AddressBook, group_id: int | None, field: str = "group_id") -> ContactGroup | None:
    """The book's group with this id (None for None); a 422 on `field` for any other id."""
    if group_id is None:
        return None
    try:
        return book_group_get(book=book, group_id=group_id)
    except ContactGroup.DoesNotExist:
        raise exceptions.ValidationError({field: ["No group with this id in this client's contacts."]}) from None


# contacts


class HostingContactOutput(serializers.Serializer):
    id = serializers.IntegerField()
    email = serializers.CharField()
    name = serializers.CharField()
    phone = serializers.CharField()
    company = serializers.CharField()
    notes = serializers.CharField()
    group_id = serializers.SerializerMethodField(help_text="The contact's group (its first by name when webmail or a "
                                                 "phone put it in several); null: none.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def get_group_id(self, contact) -> int | None:
        first = next(iter(contact.groups.all()), None)  # ContactGroup orders by name
        return first.pk if first else None


class HostingContactPageOutput(serializers.Serializer):
    contacts = HostingContactOutput(many=True)
    total = serializers.IntegerField()
    page = serializers.IntegerField()
    page_size = serializers.IntegerField()


class HostingContactListQuery(page_query(size_name="page_size", default_size=20, max_size=100,
                                         name="HostingContactPageQuery")):
    group_id = serializers.IntegerField(required=False, min_value=1,
                                        help_text="Only the members of this group of the client's contacts (422 for "
                                        "any other id).")
    q = serializers.CharField(max_length=200, required=False, allow_blank=True,
                              help_text="Words that must each occur in the email, name or company (any case).")


class HostingContactUpdateInput(StrictInput):
    refused = {"id": "Read-only.", "created_at": "Read-only.", "updated_at": "Read-only."}

    email = serializers.EmailField(max_length=320, required=False, help_text="Stored lower-cased; unique in the "
                                   "client's contacts (409 when another contact has it).")
    name = serializers.CharField(max_length=255, required=False)
    phone = serializers.CharField(max_length=64, required=False, allow_blank=True)
    company = serializers.CharField(max_length=255, required=False, allow_blank=True)
    notes = serializers.CharField(max_length=MAX_NOTES, required=False, allow_blank=True, trim_whitespace=False)
    group_id = serializers.IntegerField(required=False, allow_null=True, help_text="A group of the client's contacts; "
                                        "the contact is then in exactly that group (null: in none). 422 for any "
                                        "other id.")

    def validate_email(self, value: str) -> str:
        return value.lower()


class HostingContactCreateInput(HostingContactUpdateInput):
    email = serializers.EmailField(max_length=320, help_text="Stored lower-cased; unique in the client's contacts "
                                   "(409 when a contact has it already).")
    name = serializers.CharField(max_length=255, required=False, help_text="Default: the email address.")


class HostingContactListApi(ClientBookApi):
    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_contacts_list", parameters=[HostingContactListQuery],
                   responses={200: HostingContactPageOutput}, summary="List the client's contacts, a page at a time",
                   description="Ordered by name. " + GATE)
    def get(self, request, mailbox_id: int):
        book = self.book(mailbox_id)
        query = HostingContactListQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        page, page_size = query.validated_data["page"], query.validated_data["page_size"]
        contacts = Contact.objects.filter(book=book)
        if "group_id" in query.validated_data:
            contacts = contacts.filter(groups=group_of(book, query.validated_data["group_id"]))
        contacts = contact_search(contacts, query.validated_data.get("q", "")).order_by("name", "pk")
        rows = page_window(contacts.prefetch_related("groups"), page=page, size=page_size)
        return Response(HostingContactPageOutput({"contacts": rows, "total": contacts.count(), "page": page,
                                                  "page_size": page_size}).data)

    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_contacts_create", request=HostingContactCreateInput,
                   responses={201: HostingContactOutput}, summary="Add a contact",
                   description="422: a field is invalid, too long, unknown, or group_id is not a group of the "
                   "client's contacts. 409: a contact has this address already. " + GATE)
    def post(self, request, mailbox_id: int):
        book = self.book(mailbox_id)
        data = HostingContactCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        group = group_of(book, fields.pop("group_id", None))
        contact_address_free(book=book, email=fields["email"])
        contact = contact_create(book=book, name=fields.pop("name", ""),
                                 groups=[group.name] if group else [], **fields)
        return Response(HostingContactOutput(contact).data, status=201)


class HostingContactDetailApi(ClientBookApi):
    def contact(self, book: AddressBook, contact_id: int) -> Contact:
        return Contact.objects.prefetch_related("groups").get(book=book, pk=contact_id)

    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_contacts_retrieve",
                   responses={200: HostingContactOutput}, summary="One contact", description=GATE)
    def get(self, request, mailbox_id: int, contact_id: int):
        return Response(HostingContactOutput(self.contact(self.book(mailbox_id), contact_id)).data)

    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_contacts_update", request=HostingContactUpdateInput,
                   responses={200: HostingContactOutput}, summary="Change a contact",
                   description="Fields left out keep their value; group_id sets exactly that group (null: none). "
                   "422: a field is invalid or unknown. 409: another contact has the new address. " + GATE)
    def patch(self, request, mailbox_id: int, contact_id: int):
        book = self.book(mailbox_id)
        contact = self.contact(book, contact_id)
        data = HostingContactUpdateInput(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        groups = None
        if "group_id" in fields:
            group = group_of(book, fields.pop("group_id"))
            groups = [group.name] if group else []
        if "email" in fields:
            contact_address_free(book=book, email=fields["email"], but=contact)
        contact = contact_update(contact=contact, groups=groups, **fields)
        return Response(HostingContactOutput(self.contact(book, contact.pk)).data)

    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_contacts_delete", responses={204: None},
                   summary="Delete a contact", description="Campaigns it was enrolled in keep their history. " + GATE)
    def delete(self, request, mailbox_id: int, contact_id: int):
        contact_delete(contact=self.contact(self.book(mailbox_id), contact_id))
        return Response(status=204)


# groups


class HostingGroupOutput(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    contacts_count = serializers.IntegerField(help_text="How many contacts are in the group.")
    created_at = serializers.DateTimeField()


class HostingGroupCreateInput(StrictInput):
    name = serializers.CharField(max_length=100, help_text="1 to 100 characters; unique in the client's contacts "
                                 "(409 otherwise).")


def _groups(book: AddressBook):
    return ContactGroup.objects.filter(book=book).annotate(contacts_count=Count("contacts")).order_by("name", "pk")


class HostingGroupListApi(ClientBookApi):
    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_contact_groups_list",
                   responses={200: HostingGroupOutput(many=True)}, summary="List the client's contact groups",
                   description="Ordered by name, with member counts. " + GATE)
    def get(self, request, mailbox_id: int):
        return Response(HostingGroupOutput(_groups(self.book(mailbox_id)), many=True).data)

    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_contact_groups_create", request=HostingGroupCreateInput,
                   responses={201: HostingGroupOutput}, summary="Add a contact group",
                   description="422: name missing, blank or over 100 characters. 409: a group has that name "
                   "already. " + GATE)
    def post(self, request, mailbox_id: int):
        book = self.book(mailbox_id)
        data = HostingGroupCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        group = group_create(book=book, name=data.validated_data["name"])
        return Response(HostingGroupOutput(_groups(book).get(pk=group.pk)).data, status=201)


class HostingGroupDetailApi(ClientBookApi):
    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_contact_groups_delete", responses={204: None},
                   summary="Delete a contact group (its contacts stay)",
                   description="Campaigns aimed at the group keep their audience as enrolled; a draft aimed at it "
                   "then reaches every contact of the client (set group_id again before sending). " + GATE)
    def delete(self, request, mailbox_id: int, group_id: int):
        group_delete(group=ContactGroup.objects.get(book=self.book(mailbox_id), pk=group_id))
        return Response(status=204)


# CSV


class CsvBodyParser(BaseParser):
    """A raw CSV body (Content-Type: text/csv), read up to one byte past the limit."""

    media_type = "text/csv"

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read(csv_io.MAX_CSV_BYTES + 1) if stream is not None else b""
        return {"csv": raw}


class CsvRenderer(BaseRenderer):
    """text/csv for the export; an error (a dict) is written as JSON text."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if isinstance(data, str):
            return data.encode("utf-8")
        return JSONRenderer().render(data)


class CsvImportInput(StrictInput):
    csv = serializers.CharField(trim_whitespace=False, allow_blank=True, max_length=csv_io.MAX_CSV_BYTES,
                                help_text="The file's text: a header row naming columns out of email (required), "
                                "name, phone, company, notes, group (any case and order), then one contact a row. "
                                f"At most {csv_io.MAX_CSV_BYTES // (1024 * 1024)} MB and {csv_io.MAX_CSV_ROWS} rows.")
    dry_run = serializers.BooleanField(default=False, help_text="true: only the preview; nothing changes.")


@extend_schema_field({"type": "string", "enum": ["create", "update", "skip"]})
class CsvActionField(serializers.CharField):
    pass


class CsvRowOutput(serializers.Serializer):
    row = serializers.IntegerField(help_text="The row in the file (the header is row 1).")
    email = serializers.CharField()
    name = serializers.CharField()
    phone = serializers.CharField()
    company = serializers.CharField()
    notes = serializers.CharField()
    group = serializers.CharField()
    action = CsvActionField(help_text="create: a new contact; update: "
                                     "the contact with this address changes; skip: an error, or nothing to change.")
    errors = serializers.ListField(child=serializers.CharField())
    contact_id = serializers.IntegerField(allow_null=True, help_text="The contact it updates, or (applied) made.")


class CsvTotalsOutput(serializers.Serializer):
    rows = serializers.IntegerField()
    create = serializers.IntegerField()
    update = serializers.IntegerField()
    skip = serializers.IntegerField()
    errors = serializers.IntegerField(help_text="Rows with at least one error (all skipped).")


class ImportJobOutput(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=["queued", "done"], help_text="queued: waiting or being applied; done: "
                                                                            "every row was applied or refused.")
    total = serializers.IntegerField(help_text="Rows to apply (the report's create and update rows).")
    position = serializers.IntegerField(help_text="Rows applied or refused so far.")
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    failed = serializers.IntegerField(help_text="Rows refused when applied (the contacts changed since the preview).")
    errors = serializers.ListField(child=serializers.CharField(), help_text='"Row 7: ..." for the first 200 refused.')
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    url = serializers.SerializerMethodField(help_text="Where to ask for its progress (GET).")

    def get_url(self, job) -> str:
        return self.context["request"].build_absolute_uri(
            f"/v1/hosting/mailboxes/{self.context['mailbox_id']}/contacts/imports/{job.pk}")


class CsvReportOutput(serializers.Serializer):
    dry_run = serializers.BooleanField()
    applied = serializers.BooleanField(help_text="true when every row was applied before the answer; false for a dry "
                                                 "run (nothing changed) and for a background import (see job).")
    columns = serializers.ListField(child=serializers.CharField(), help_text="The known columns the header named.")
    unknown_columns = serializers.ListField(child=serializers.CharField(), help_text="Header names that were ignored.")
    totals = CsvTotalsOutput()
    rows = CsvRowOutput(many=True)
    job = ImportJobOutput(allow_null=True, help_text=(
        f"A file with more than {INLINE_MAX_ITEMS} rows to apply is applied in the background (202): its progress. "
        "null otherwise."))


IMPORT_DESCRIPTION = (
    "Send the CSV as the body with Content-Type text/csv (then `?dry_run=true` asks for the preview), or as JSON "
    '{"csv": "...", "dry_run": true}. UTF-8, comma-separated; the header names columns out of email (required), '
    "name, phone, company, notes, group, in any case and order; other columns are ignored and listed in "
    f"unknown_columns. At most {csv_io.MAX_CSV_BYTES // (1024 * 1024)} MB and {csv_io.MAX_CSV_ROWS} rows (422 "
    "otherwise, as for a file without an email column or that is not CSV). A row whose address is already in the "
    "client's contacts updates that contact (non-empty cells replace the field, empty cells keep it); others create "
    "one (named after the address when name is empty); `group` adds the contact to that group, made if missing. A row "
    "with an error or a duplicate address is skipped and says why; the other rows are applied (dry_run: nothing is). "
    f"The report is the same either way. Up to {INLINE_MAX_ITEMS} rows to apply are applied before the answer (200, "
    f"applied true); more are applied in the background, each exactly once, in file order (202, applied false, `job` "
    "with its progress; GET its `url` until its status is done). " + GATE)


class HostingContactImportApi(ClientBookApi):
    parser_classes = [JSONParser, CsvBodyParser]

    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_contacts_import",
                   request={"application/json": CsvImportInput, "text/csv": {"type": "string"}},
                   parameters=[OpenApiParameter("dry_run", OpenApiTypes.BOOL, required=False,
                                                description="With a text/csv body: true asks for the preview only.")],
                   responses={200: CsvReportOutput, 202: CsvReportOutput},
                   summary="Import contacts from CSV (or preview the import)",
                   description=IMPORT_DESCRIPTION)
    def post(self, request, mailbox_id: int):
        book = self.book(mailbox_id)
        if isinstance(request.data.get("csv"), bytes):
            try:
                text = request.data["csv"].decode("utf-8")
            except UnicodeDecodeError:
                raise exceptions.ValidationError({"csv": ["The file is not UTF-8 text."]}) from None
            flag = request.query_params.get("dry_run", "false").lower()
            if flag not in ("true", "false", "1", "0"):
                raise exceptions.ValidationError({"dry_run": ["Must be true or false."]})
            dry_run = flag in ("true", "1")
        else:
            data = CsvImportInput(data=request.data)
            data.is_valid(raise_exception=True)
            text, dry_run = data.validated_data["csv"], data.validated_data["dry_run"]
        job = None
        try:
            if dry_run:
                report = csv_io.contacts_csv_preview(book=book, text=text)
            else:
                report, job = contacts_csv_import_start(book=book, text=text)
        except csv_io.CsvInvalid as exc:
            raise exceptions.ValidationError({"csv": [exc.detail]}) from None
        output = CsvReportOutput({"dry_run": dry_run, "applied": report.applied, "columns": report.columns,
                                  "unknown_columns": report.unknown_columns, "totals": report.totals,
                                  "rows": report.rows, "job": job},
                                 context={"request": request, "mailbox_id": mailbox_id})
        return Response(output.data, status=202 if job is not None else 200)


class HostingContactImportJobApi(ClientBookApi):
    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_contacts_import_job", responses={200: ImportJobOutput},
                   summary="A background CSV import's progress",
                   description="The import a 202 from the CSV import named (404 for another client's). " + GATE)
    def get(self, request, mailbox_id: int, job_id: int):
        book = self.book(mailbox_id)
        try:
            job = import_job_of_book(book=book, job_id=job_id, kind=ImportJob.Kind.CONTACTS_CSV)
        except ImportJob.DoesNotExist:
            raise exceptions.NotFound("No such import.") from None
        return Response(ImportJobOutput(job, context={"request": request, "mailbox_id": mailbox_id}).data)


class CsvExportQuery(serializers.Serializer):
    group_id = serializers.IntegerField(required=False, min_value=1, help_text="Only this group's members.")


class HostingContactExportApi(ClientBookApi):
    renderer_classes = [JSONRenderer, CsvRenderer]

    @extend_schema(tags=[TAG], operation_id="hosting_mailbox_contacts_export", parameters=[CsvExportQuery],
                   responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description=(
                       "Header email,name,phone,company,notes,group, then one contact a row, by name. group: the "
                       "contact's first group by name. A cell starting with = + - @ ' a tab or a carriage return "
                       "gets a ' in front so spreadsheets do not run it as a formula; import takes it off again."))},
                   summary="Export the client's contacts as CSV", description=GATE)
    def get(self, request, mailbox_id: int):
        book = self.book(mailbox_id)
        query = CsvExportQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        contacts = Contact.objects.filter(book=book)
        if "group_id" in query.validated_data:
            contacts = contacts.filter(groups=group_of(book, query.validated_data["group_id"]))
        text = csv_io.contacts_csv_export(contacts=contacts.order_by("name", "pk").prefetch_related("groups"))
        response = HttpResponse(text, content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="contacts.csv"'
        return response
