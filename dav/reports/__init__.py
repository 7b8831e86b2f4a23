"""One module per REPORT (RFC 3253 3.6) that dav/report.py dispatches to, as the other methods have one each."""
