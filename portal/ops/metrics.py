"""Prometheus metrics at /metrics: the job queues and outcomes (mailcore.monitoring, read at each
scrape) and request latency (measured by RequestMetricsMiddleware in this process; with several
gunicorn workers set PROMETHEUS_MULTIPROC_DIR so every worker's requests are counted).

Who may read it: an address in METRICS_NETWORKS (loopback by default), or anyone presenting
`Authorization: Bearer <METRICS_TOKEN>`. Everyone else gets the same 404 as any unknown page."""
import os
import secrets
import time

from django.conf import settings
from django.http import Http404, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

from mailcore import monitoring
from mailcore.ipnets import client_ip, ip_in_list

REQUEST_SECONDS = Histogram("mailwell_http_request_duration_seconds", "Time to answer a request",
                            ["method", "route", "status"],
                            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))


class JobsCollector:
    """Read at every scrape, from the database every process shares."""

    def collect(self):
        due = GaugeMetricFamily("mailwell_queue_due", "Items due and not yet done", labels=["queue"])
        oldest = GaugeMetricFamily("mailwell_queue_oldest_due_seconds", "How long the oldest due item has waited",
                                   labels=["queue"])
        for queue in monitoring.queues():
            due.add_metric([queue.name], queue.due)
            oldest.add_metric([queue.name], queue.oldest_seconds)
        outcomes = GaugeMetricFamily("mailwell_recent_outcomes", "Sends and webhook deliveries made in the last hour, "
                                     "by state",
                                     labels=["kind", "state"])
        for kind, states in monitoring.outcomes().items():
            for state, count in sorted(states.items()):
                outcomes.add_metric([kind, state], count)
        return [due, oldest, outcomes]


def _registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(JobsCollector())
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        MultiProcessCollector(registry)
    else:
        registry.register(REQUEST_SECONDS)
    return registry


def _allowed(request) -> bool:
    token = settings.METRICS_TOKEN
    offered = request.headers.get("Authorization", "")
    if token and secrets.compare_digest(offered.encode(), f"Bearer {token}".encode()):
        return True
    return ip_in_list(client_ip(request.META, settings.TRUSTED_PROXY_COUNT), settings.METRICS_NETWORKS)


@never_cache
@require_GET
def metrics(request):
    if not _allowed(request):
        raise Http404
    return HttpResponse(generate_latest(_registry()), content_type=CONTENT_TYPE_LATEST)


class RequestMetricsMiddleware:
    """Times every request, labelled by its URL pattern (not its path: ids would make a series each)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        route = match.route if match is not None else "unmatched"
        REQUEST_SECONDS.labels(request.method, route, str(response.status_code)).observe(time.perf_counter() - started)
        return response
