"""/calendar/tasks: the account's tasks (VTODO), in its calendars that hold tasks: the same ones a
mailbox owner sees on the webmail's Tasks page and syncs with Apple Reminders, Thunderbird or
Tasks.org over CalDAV. Scopes `calendar:read` and `calendar:write`, plan Pro or Premium."""
from datetime import UTC, date, datetime, time

from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from api.inputs import StrictInput
from api.pagination import page_query
from api.permissions import request_account
from api.views.contacts import managed_mailbox
from calendars.models import Calendar, CalendarEvent
from calendars.selectors import calendar_get, task_get, task_list
from calendars.services import calendar_for, event_delete, event_move, task_create, task_update
from mailcore.paging import page_window

GATE = "Plan Pro or Premium (else 403 naming the plan)."
READ_WRITE = {"GET": "calendar:read", "POST": "calendar:write", "PATCH": "calendar:write", "DELETE": "calendar:write"}
MAX_DESCRIPTION = 10_000
DUE_HELP = ("A date (YYYY-MM-DD: due that day) or an ISO 8601 datetime (with `Z` or an offset; without: UTC); "
            "null: no due date.")


@extend_schema_field({"anyOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "date-time"}],
                      "nullable": True})
class DueField(serializers.Field):
    """A due date or moment: (aware UTC datetime, date only?) in, the same shape out."""

    def to_internal_value(self, value):
        if not isinstance(value, str) or len(value) > 40:
            raise serializers.ValidationError("Must be an ISO 8601 date or datetime string.")
        value = value.strip()
        if len(value) == 10:
            try:
                return datetime.combine(date.fromisoformat(value), time(), tzinfo=UTC), True
            except ValueError:
                pass
        try:
            moment = parse_datetime(value)
        except ValueError:
            moment = None
        if moment is None:
            raise serializers.ValidationError("Not an ISO 8601 date or datetime.")
        return (moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)), False

    def to_representation(self, task):
        if task.due is None:
            return None
        return task.due.date().isoformat() if task.all_day else task.due.astimezone(UTC).isoformat().replace(
            "+00:00", "Z")


def _calendar_of(account, calendar_id: int) -> Calendar:
    try:
        calendar = calendar_get(account=account, calendar_id=calendar_id)
    except Calendar.DoesNotExist:
        raise serializers.ValidationError("Not a calendar of this account.") from None
    if not calendar.holds(CalendarEvent.Component.TASK):
        raise serializers.ValidationError("That calendar holds events only.")
    return calendar


class TaskUpdateInput(StrictInput):
    """Changes to a task: only the fields sent change; any other key is a 422."""

    refused = {"mailbox": "A task stays with its mailbox; `calendar_id` moves it among that mailbox's calendars.",
               **{name: "Read-only." for name in ("id", "uid", "status", "completed_at", "created_at", "updated_at")}}

    title = serializers.CharField(max_length=255, required=False)
    description = serializers.CharField(max_length=MAX_DESCRIPTION, required=False, allow_blank=True,
                                        trim_whitespace=False)
    due = DueField(required=False, allow_null=True, help_text=DUE_HELP)
    priority = serializers.IntegerField(min_value=0, max_value=9, required=False,
                                        help_text="1 (highest) to 9 (lowest); 0: none (RFC 5545 PRIORITY).")
    completed = serializers.BooleanField(required=False, help_text="Done (STATUS COMPLETED, with when) or not.")
    calendar_id = serializers.IntegerField(required=False, help_text="Move it to this calendar of the same mailbox "
                                           "(or of the account, for the account's own); it must hold tasks.")

    def validate_calendar_id(self, value: int) -> Calendar:
        return _calendar_of(self.context["account"], value)


class TaskInput(TaskUpdateInput):
    """A new task; any key not listed here is a 422."""

    refused = {name: why for name, why in TaskUpdateInput.refused.items() if name != "mailbox"}

    title = serializers.CharField(max_length=255)
    calendar_id = serializers.IntegerField(required=False, help_text="The calendar to put it in (it must hold "
                                           "tasks); without it the default calendar of `mailbox` (or the account).")
    mailbox = serializers.EmailField(max_length=320, required=False, allow_null=True,
                                     help_text="A managed mailbox of the account: its default calendar (its owner "
                                     "sees the task in webmail and on the phone). Not with calendar_id.")

    def validate_mailbox(self, value):
        return managed_mailbox(self.context["account"], value)

    def validate(self, attrs):
        if "calendar_id" in attrs and attrs.get("mailbox") is not None:
            raise serializers.ValidationError({"mailbox": ["Give calendar_id or mailbox, not both."]})
        return attrs


class TaskOutput(serializers.Serializer):
    id = serializers.IntegerField()
    uid = serializers.CharField(help_text="The iCalendar UID (what CalDAV clients see).")
    title = serializers.CharField()
    description = serializers.CharField()
    due = DueField(source="*", help_text="A date (due that day), a UTC datetime, or null.")
    priority = serializers.IntegerField(help_text="1 highest to 9 lowest; 0 none.")
    completed = serializers.SerializerMethodField()
    completed_at = serializers.DateTimeField(allow_null=True)
    status = serializers.CharField(help_text="NEEDS-ACTION, IN-PROCESS, COMPLETED or CANCELLED (as clients set it).")
    calendar_id = serializers.IntegerField()
    mailbox = serializers.SerializerMethodField(help_text="The mailbox whose calendar holds it; null: the account's.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def get_completed(self, task) -> bool:
        return task.status == "COMPLETED"

    def get_mailbox(self, task) -> str | None:
        return task.calendar.mailbox.address if task.calendar.mailbox_id else None


class TaskPageOutput(serializers.Serializer):
    tasks = TaskOutput(many=True)
    total = serializers.IntegerField()
    page = serializers.IntegerField()
    per_page = serializers.IntegerField()


class TaskListQuery(page_query(default_size=50, max_size=100, name="TaskPageQuery")):
    mailbox = serializers.EmailField(
        max_length=320, required=False,
        help_text="Only this managed mailbox's tasks; without it every task of the account.")
    calendar_id = serializers.IntegerField(required=False, min_value=1, help_text="Only this calendar's tasks.")
    completed = serializers.BooleanField(required=False, allow_null=True, default=None,
                                         help_text="true: only done ones; false: only open ones; absent: both.")

    def validate_mailbox(self, value: str):
        return managed_mailbox(self.context["account"], value)

    def validate_calendar_id(self, value: int) -> Calendar:
        return _calendar_of(self.context["account"], value)


def _fields(data: dict) -> dict:
    fields = dict(data)
    if "due" in fields:
        fields["due"], fields["due_date_only"] = fields["due"] if fields["due"] is not None else (None, False)
    return fields


class TaskListCreateApi(APIView):
    required_scopes = READ_WRITE
    required_feature = "calendar"

    @extend_schema(tags=["calendar"], operation_id="calendar_tasks_list", parameters=[TaskListQuery],
                   responses={200: TaskPageOutput},
                   summary="List tasks, open first by due date (scope calendar:read)",
                   description=f"{GATE} Every calendar of the account, one mailbox's, or one calendar.")
    def get(self, request):
        account = request_account(request)
        query = TaskListQuery(data=request.query_params, context={"account": account})
        query.is_valid(raise_exception=True)
        params = query.validated_data
        tasks = task_list(account=account, mailbox=params.get("mailbox"), calendar=params.get("calendar_id"),
                          completed=params.get("completed"))
        page, per_page = params["page"], params["per_page"]
        return Response(TaskPageOutput({"tasks": page_window(tasks, page=page, size=per_page),
                                        "total": tasks.count(), "page": page, "per_page": per_page}).data)

    @extend_schema(tags=["calendar"], operation_id="calendar_tasks_create", request=TaskInput,
                   responses={201: TaskOutput}, summary="Create a task (scope calendar:write)", description=GATE)
    def post(self, request):
        account = request_account(request)
        data = TaskInput(data=request.data, context={"account": account})
        data.is_valid(raise_exception=True)
        fields = _fields(data.validated_data)
        calendar = fields.pop("calendar_id", None) or calendar_for(account=account, mailbox=fields.pop("mailbox", None))
        fields.pop("mailbox", None)
        return Response(TaskOutput(task_create(calendar=calendar, **fields)).data, status=201)


class TaskDetailApi(APIView):
    required_scopes = READ_WRITE
    required_feature = "calendar"

    def _task(self, request, task_id: int):
        return task_get(account=request_account(request), task_id=task_id)

    @extend_schema(tags=["calendar"], operation_id="calendar_tasks_retrieve",
                   responses={200: TaskOutput, 404: OpenApiResponse(description="Not yours")},
                   summary="Fetch a task (scope calendar:read)", description=GATE)
    def get(self, request, task_id: int):
        return Response(TaskOutput(self._task(request, task_id)).data)

    @extend_schema(tags=["calendar"], operation_id="calendar_tasks_update", request=TaskUpdateInput,
                   responses={200: TaskOutput},
                   summary="Change, complete or move a task (scope calendar:write)",
                   description=f"{GATE} Only the fields sent change; the rest of its iCalendar data (alarms, what "
                   "clients added) is kept. `calendar_id` of another mailbox's calendar is a 422.")
    def patch(self, request, task_id: int):
        task = self._task(request, task_id)
        data = TaskUpdateInput(data=request.data, context={"account": request_account(request)})
        data.is_valid(raise_exception=True)
        fields = _fields(data.validated_data)
        target = fields.pop("calendar_id", None)
        if target is not None and target.mailbox_id != task.calendar.mailbox_id:
            raise serializers.ValidationError({"calendar_id": ["Must be a calendar of the same mailbox."]})
        if fields:
            task = task_update(task=task, **fields)
        if target is not None:
            task, _ = event_move(event=task, calendar=target)
        return Response(TaskOutput(task).data)

    @extend_schema(tags=["calendar"], operation_id="calendar_tasks_destroy", responses={204: None},
                   summary="Delete a task for good (scope calendar:write)", description=GATE)
    def delete(self, request, task_id: int):
        event_delete(event=self._task(request, task_id))
        return Response(status=204)
