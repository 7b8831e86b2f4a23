"""/v1/hosting/domains/{id}/dmarc, /dmarc/reports and /monthly-report: a client domain's DMARC and
TLS report figures (the dashboard's numbers and the policy advisor), its reports, and the switch of
the partner-branded monthly report to the client."""
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response

from api.hosting.access import HostingApi
from api.hosting.views import DOMAINS
from api.inputs import StrictInput
from api.pagination import page_query
from mailcore.domains.models import Domain
from mailcore.paging import page_window
from mailcore.partners.selectors import partner_domain_get
from trust.advisor import RULE, policy_advice
from trust.selectors import DEFAULT_DAYS, MAX_DAYS, dmarc_summary, domain_dmarc_reports, monthly_report_get
from trust.services import monthly_report_set

TAG = "hosting: domain trust"


class SourceOutput(serializers.Serializer):
    source_ip = serializers.IPAddressField()
    reverse_name = serializers.CharField(help_text="The address's PTR name; \"\" when it has none.")
    ours = serializers.BooleanField(help_text="One of our outbound servers; false: an outside sender.")
    messages = serializers.IntegerField()
    aligned = serializers.IntegerField(help_text="Messages that passed DMARC (SPF or DKIM aligned).")
    failed = serializers.IntegerField()
    spf_aligned = serializers.IntegerField()
    dkim_aligned = serializers.IntegerField()
    spf_pass = serializers.IntegerField(help_text="SPF passed, aligned or not.")
    dkim_pass = serializers.IntegerField(help_text="A DKIM signature passed, aligned or not.")
    dispositions = serializers.DictField(child=serializers.IntegerField(),
                                         help_text="Messages by what the receiver did: none, quarantine, reject.")


class DayOutput(serializers.Serializer):
    day = serializers.DateField()
    messages = serializers.IntegerField()
    aligned = serializers.IntegerField()
    failed = serializers.IntegerField()


class TlsOutput(serializers.Serializer):
    reports = serializers.IntegerField()
    successes = serializers.IntegerField(help_text="TLS sessions to the domain's MX that succeeded.")
    failures = serializers.IntegerField()
    failure_types = serializers.DictField(child=serializers.IntegerField(),
                                          help_text="Failed sessions by RFC 8460 result type.")


class AdviceOutput(serializers.Serializer):
    stage = serializers.ChoiceField(choices=["collecting", "fix_sources", "quarantine", "wait_quarantine", "reject",
                                             "done"])
    policy = serializers.CharField(help_text="The p= to publish now.")
    text = serializers.CharField()
    rule = serializers.CharField()


class DmarcSummaryOutput(serializers.Serializer):
    domain = serializers.CharField(source="domain.name")
    since = serializers.DateTimeField()
    until = serializers.DateTimeField()
    reports = serializers.IntegerField()
    messages = serializers.IntegerField()
    aligned = serializers.IntegerField()
    failed = serializers.IntegerField()
    aligned_percent = serializers.FloatField()
    spf_aligned = serializers.IntegerField()
    dkim_aligned = serializers.IntegerField()
    spf_pass = serializers.IntegerField()
    dkim_pass = serializers.IntegerField()
    published_policy = serializers.CharField(allow_null=True, help_text="p= as the newest report saw it.")
    days_reported = serializers.IntegerField(help_text="Days with at least one report.")
    sources = SourceOutput(many=True)
    days = DayOutput(many=True, help_text="One entry per day of the window, oldest first.")
    tls = TlsOutput()
    advice = serializers.SerializerMethodField()

    @extend_schema_field(AdviceOutput)
    def get_advice(self, summary) -> dict:
        advice = policy_advice(summary)
        return {"stage": advice.stage, "policy": advice.policy, "text": advice.text, "rule": RULE}


class DmarcSummaryQuery(serializers.Serializer):
    days = serializers.IntegerField(default=DEFAULT_DAYS, min_value=1, max_value=MAX_DAYS,
                                    help_text=f"The window: reports that began in the last 1 to {MAX_DAYS} days; "
                                              f"default {DEFAULT_DAYS}.")


class ReportSourceOutput(serializers.Serializer):
    source_ip = serializers.IPAddressField()
    reverse_name = serializers.CharField()
    ours = serializers.BooleanField()
    count = serializers.IntegerField()
    disposition = serializers.CharField()
    spf_aligned = serializers.BooleanField()
    dkim_aligned = serializers.BooleanField()
    spf_result = serializers.CharField()
    dkim_result = serializers.CharField()
    header_from = serializers.CharField()


class DmarcReportOutput(serializers.Serializer):
    id = serializers.IntegerField()
    org_name = serializers.CharField(help_text="The receiver that sent the report.")
    report_id = serializers.CharField()
    begin_at = serializers.DateTimeField()
    end_at = serializers.DateTimeField()
    policy_domain = serializers.CharField()
    policy = serializers.CharField()
    received_at = serializers.DateTimeField()
    sources = ReportSourceOutput(many=True)


class DmarcReportPageOutput(serializers.Serializer):
    reports = DmarcReportOutput(many=True)
    total = serializers.IntegerField()
    page = serializers.IntegerField()
    per_page = serializers.IntegerField()


DmarcReportQuery = page_query(name="DmarcReportPageQuery")


class MonthlyReportOutput(serializers.Serializer):
    enabled = serializers.BooleanField()
    send_to = serializers.EmailField(allow_blank=True, help_text="The client's contact address.")


class MonthlyReportInput(StrictInput):
    enabled = serializers.BooleanField(required=False)
    send_to = serializers.EmailField(required=False, allow_blank=True)


class _DomainApi(HostingApi):
    required_scopes = DOMAINS

    def domain(self, domain_id: int) -> Domain:
        return partner_domain_get(partner=self.partner, domain_id=domain_id)


class HostingDomainDmarcApi(_DomainApi):
    @extend_schema(tags=[TAG], operation_id="hosting_domain_dmarc_summary", parameters=[DmarcSummaryQuery],
                   responses={200: DmarcSummaryOutput}, summary="A client domain's DMARC and TLS report figures",
                   description="What receivers reported about mail sent as the domain (sent to "
                   "dmarc-reports@<domain> and tls-reports@<domain>): volume by source, SPF, DKIM and alignment, "
                   "a day-by-day trend, TLS sessions, and when a stricter DMARC policy is safe. 422 for `days` "
                   f"outside 1 to {MAX_DAYS}.")
    def get(self, request, domain_id: int):
        domain = self.domain(domain_id)
        query = DmarcSummaryQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(DmarcSummaryOutput(dmarc_summary(domain=domain, days=query.validated_data["days"])).data)


class HostingDomainDmarcReportListApi(_DomainApi):
    @extend_schema(tags=[TAG], operation_id="hosting_domain_dmarc_reports_list", parameters=[DmarcReportQuery],
                   responses={200: DmarcReportPageOutput}, summary="A client domain's DMARC reports, newest first",
                   description="Each report once (a receiver's report delivered twice is one), with a row per "
                   "sending source.")
    def get(self, request, domain_id: int):
        domain = self.domain(domain_id)
        query = DmarcReportQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        page, per_page = query.validated_data["page"], query.validated_data["per_page"]
        rows = domain_dmarc_reports(domain=domain)
        return Response(DmarcReportPageOutput({"reports": page_window(rows, page=page, size=per_page),
                                               "total": rows.count(), "page": page, "per_page": per_page}).data)


class HostingDomainMonthlyReportApi(_DomainApi):
    @extend_schema(tags=[TAG], operation_id="hosting_domain_monthly_report_retrieve",
                   responses={200: MonthlyReportOutput}, summary="The client's monthly report: on or off")
    def get(self, request, domain_id: int):
        return Response(MonthlyReportOutput(monthly_report_get(domain=self.domain(domain_id))).data)

    @extend_schema(tags=[TAG], operation_id="hosting_domain_monthly_report_update", request=MonthlyReportInput,
                   responses={200: MonthlyReportOutput}, summary="Switch the client's monthly report on or off",
                   description="On the first days of each month, last month's figures go to `send_to` under your "
                   "brand, once. Fields left out keep their value; 422 when switched on without `send_to`.")
    def patch(self, request, domain_id: int):
        domain = self.domain(domain_id)
        data = MonthlyReportInput(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(MonthlyReportOutput(monthly_report_set(domain=domain, **data.validated_data)).data)
