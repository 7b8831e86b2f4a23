"""What an operator's tooling reads: health (/healthz, /readyz), Prometheus metrics (/metrics),
request ids in structured logs. The numbers themselves come from mailcore.monitoring."""
