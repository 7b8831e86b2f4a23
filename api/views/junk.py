"""/inbox/spam and /inbox/not-spam: an owner's "Spam" and "Not spam" over the API, as in the webmail
(protection.learning): rspamd learns the messages for the mailbox, and they move to Junk or to the
Inbox in the same call. Scope mailboxes:write."""
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from api.inputs import StrictInput
from api.views.inbox import MailboxQuery, _mailbox, _query
from protection.learning import MAX_MESSAGES, Learning, messages_mark_not_spam, messages_mark_spam


class LearnInput(StrictInput):
    uids = serializers.ListField(child=serializers.IntegerField(min_value=1), min_length=1, max_length=MAX_MESSAGES,
                                 help_text=f"The messages' UIDs in `folder`, 1 to {MAX_MESSAGES}.")


class LearnOutput(serializers.Serializer):
    folder = serializers.CharField(help_text="Where the messages are now: Junk, or INBOX.")
    count = serializers.IntegerField(help_text="Messages filed (UIDs that no longer exist are skipped).")
    learned = serializers.IntegerField(help_text="Of those, how many the spam filter learned.")
    learning = serializers.ChoiceField(
        choices=[Learning.DONE, Learning.UNAVAILABLE, Learning.OFF],
        help_text="learned: the filter learned them; unavailable: it could not be reached, the messages were "
        "filed but not learned (mark them again later); off: no spam filter here (or a connected mailbox).")
    uid = serializers.IntegerField(allow_null=True, help_text="With one message: its UID in `folder`.")


def _learn(request, mark):
    query = _query(MailboxQuery, request)
    mailbox = _mailbox(request, query["email"])
    data = LearnInput(data=request.data)
    data.is_valid(raise_exception=True)
    learned = mark(mailbox=mailbox, folder=query["folder"], uids=data.validated_data["uids"])
    return Response(LearnOutput(learned).data)


class InboxSpamApi(APIView):
    required_scopes = "mailboxes:write"

    @extend_schema(
        tags=["inbox"], operation_id="inbox_mark_spam", parameters=[MailboxQuery], request=LearnInput,
        responses={200: LearnOutput},
        summary="Spam: teach the mailbox's spam filter and move the messages to Junk. Scope mailboxes:write.",
    )
    def post(self, request):
        return _learn(request, messages_mark_spam)


class InboxNotSpamApi(APIView):
    required_scopes = "mailboxes:write"

    @extend_schema(
        tags=["inbox"], operation_id="inbox_mark_not_spam", parameters=[MailboxQuery], request=LearnInput,
        responses={200: LearnOutput},
        summary="Not spam: teach the mailbox's spam filter and move the messages to the Inbox. "
        "Scope mailboxes:write.",
    )
    def post(self, request):
        return _learn(request, messages_mark_not_spam)
