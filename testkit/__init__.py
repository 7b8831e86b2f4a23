"""What every app's tests share: real servers on loopback (DNS, SMTP, HTTPS, Dovecot), factories,
API clients, and the standing fixtures the root conftest offers. Not an app: imported only by tests."""
