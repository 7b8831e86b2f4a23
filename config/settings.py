"""Settings from the environment with embedded defaults.

With no variables set the product runs on one machine: SQLite in DATA_DIR, an in-process
worker, no external service. DATABASE_URL, REDIS_URL and friends switch to the real services.
Every variable is documented in README.md.
"""
import os
import re
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_float, env_int, env_list, env_str, local_base_url

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("DATA_DIR", str(BASE_DIR / "var"))).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)

DJANGO_ENV = env_str("DJANGO_ENV", "development")
if DJANGO_ENV not in {"development", "production"}:
    raise ImproperlyConfigured("DJANGO_ENV must be 'development' or 'production'")
PRODUCTION = DJANGO_ENV == "production"

_DEV_SECRET_KEY = "dev-insecure-key-never-used-in-production-0123456789abcdefghijklmnop"
SECRET_KEY = env_str("SECRET_KEY", "" if PRODUCTION else _DEV_SECRET_KEY)
DEBUG = env_bool("DEBUG", not PRODUCTION)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", [] if PRODUCTION else ["localhost", "127.0.0.1", "[::1]", "testserver"])

if PRODUCTION:
    if len(SECRET_KEY) < 50 or SECRET_KEY == _DEV_SECRET_KEY or SECRET_KEY.startswith("django-insecure"):
        raise ImproperlyConfigured("DJANGO_ENV=production needs SECRET_KEY: a random value of 50+ characters")
    if not ALLOWED_HOSTS or "*" in ALLOWED_HOSTS:
        raise ImproperlyConfigured("DJANGO_ENV=production needs ALLOWED_HOSTS: a comma-separated list of host names")
    if DEBUG:
        raise ImproperlyConfigured("DEBUG must be off when DJANGO_ENV=production")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "allauth",
    "allauth.account",
    "allauth.mfa",
    "django_htmx",
    "mailcore",
    "contacts",
    "calendars",
    "imports",
    "campaigns",
    "webmail",
    "protection",
    "trust",
    "billing",
    "api",
    "portal",
]

MIDDLEWARE = [
    "portal.ops.requestid.RequestIdMiddleware",  # before all: every log line of the request has its id
    "portal.ops.metrics.RequestMetricsMiddleware",
    "portal.webmail_host.WebmailHostMiddleware",  # first: a verified partner hostname is a valid Host
    "portal.autoconfig.middleware.AutoconfigHostMiddleware",  # autoconfig.<hosted domain> is a valid Host
    "api.tracking_host.TrackingHostMiddleware",  # track.<hosted domain>, once its CNAME is seen, for /t/ only
    "portal.mtasts.middleware.MtaStsHostMiddleware",  # mta-sts.<hosted domain>: its MTA-STS policy only
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "api.middleware.JsonErrorsMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.csp",
                "portal.context_processors.portal",
                "portal.webmail.frame.webmail",
                "portal.webmail_host.brand",
            ],
        },
    },
]

# Database: SQLite file in DATA_DIR unless DATABASE_URL names another.
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{DATA_DIR / 'db.sqlite3'}"),
        conn_max_age=env_int("DB_CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Parameters bound by the server, and a statement a connection has run 5 times prepared there:
    # its later runs skip PostgreSQL's parse and plan (a quarter of its CPU on the inbound path).
    # Not for a transaction-pooling PgBouncer (prepared statements belong to one server session).
    _prepare = env_str("DB_PREPARE_THRESHOLD", "5")
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"server_side_binding": True, "prepare_threshold": None if _prepare == "off" else int(_prepare)})
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL and a busy timeout let the web server and the worker share the file.
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Redis: Celery broker and the shared cache. Without it, a file cache in DATA_DIR is shared
# by the web server's processes and the in-process worker.
REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(DATA_DIR / "cache"),
            # Throttles live here: with Django's default of 300 entries, a flood of failed sign-ins for
            # made-up addresses culled live locks. Culling now needs far more than the per-IP limits allow.
            "OPTIONS": {"MAX_ENTRIES": 1_000_000},
        }
    }
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# How often the embedded worker (no Redis) and Celery beat run the sweep, in seconds. Batch jobs
# (mail, webhooks, campaign steps) do not wait for it: they run again at once while they find work,
# and wake for their next due row (mailcore/sweep.py).
SWEEP_INTERVAL_SECONDS = env_int("SWEEP_INTERVAL_SECONDS", 2)
# Batch jobs that may run in parts side by side (mail dispatch, webhook deliveries): how many parts,
# as processes of `manage.py worker` or as Celery tasks. SQLite takes one writer at a time: one part.
WORKER_PROCESSES = env_int(
    "WORKER_PROCESSES",
    1 if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3" else min(4, os.cpu_count() or 1))
CELERY_BEAT_SCHEDULE = {
    "sweep": {"task": "mailcore.tasks.sweep", "schedule": float(SWEEP_INTERVAL_SECONDS)},
}
# Campaign mail one account may send per hour across its campaigns (on top of each mailbox's quota).
CAMPAIGN_SENDS_PER_HOUR = env_int("CAMPAIGN_SENDS_PER_HOUR", 1000)

AUTH_USER_MODEL = "mailcore.User"
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
]

# django-allauth: email + password, verified email, rate-limited logins.
ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*", "password2*"]
ACCOUNT_USER_MODEL_USERNAME_FIELD = None
ACCOUNT_UNIQUE_EMAIL = True
ACCOUNT_EMAIL_VERIFICATION = env_str("ACCOUNT_EMAIL_VERIFICATION", "mandatory")
ACCOUNT_CONFIRM_EMAIL_ON_GET = False
ACCOUNT_LOGIN_ON_EMAIL_CONFIRMATION = True
ACCOUNT_LOGOUT_ON_PASSWORD_CHANGE = False
# Failed password logins (POST /auth/login, the portal's sign-in, the webmail's, DAV's) allowed per
# login name in LOGIN_FAILURE_WINDOW, and per client IP in LOGIN_FAILURE_IP_WINDOW: the IP's limit is
# far higher, since an office behind one NAT address shares it (mailcore/throttle.py).
LOGIN_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5)
LOGIN_FAILURE_WINDOW = timedelta(minutes=env_int("LOGIN_FAILURE_WINDOW_MINUTES", 15))
LOGIN_FAILURE_IP_LIMIT = env_int("LOGIN_FAILURE_IP_LIMIT", 100)
LOGIN_FAILURE_IP_WINDOW = timedelta(minutes=env_int("LOGIN_FAILURE_IP_WINDOW_MINUTES", 15))
ACCOUNT_RATE_LIMITS = {
    # The portal's failed sign-ins are counted by mailcore.throttle (portal.adapters), not here.
    "signup": "20/h/ip",  # each account brings its own hourly allowances
    "reset_password": "20/m/ip,5/m/key",
    "confirm_email": "1/3m/key",
}
ACCOUNT_ADAPTER = "portal.adapters.AccountAdapter"
LOGIN_REDIRECT_URL = "/"
LOGIN_URL = "/accounts/login/"
# Two-factor sign-in (allauth.mfa): anyone may turn it on; the operator console requires it.
MFA_SUPPORTED_TYPES = ["totp", "recovery_codes"]
MFA_FORMS = {"activate_totp": "portal.console.forms.OperatorActivateTOTPForm"}
# The product's name in mails and authenticator apps (allauth's mails would otherwise greet from the host).
SITE_NAME = env_str("SITE_NAME", "Mailwell")
ACCOUNT_EMAIL_SUBJECT_PREFIX = f"[{SITE_NAME}] "
MFA_TOTP_ISSUER = SITE_NAME

# Every system mail leaves through the signing backend (mailcore.outbound.systemmail): aligned,
# signed, then handed to SMTP_URL's relay; without SMTP_URL it is kept in the local outbox and,
# outside production, also printed on the console (where `make run` shows verification links).
SMTP_URL = env_str("SMTP_URL")
MAILERS = {"default": {"BACKEND": "mailcore.outbound.systemmail.SignedRelayBackend",
                       "OPTIONS": {"echo": not SMTP_URL and not PRODUCTION}}}
# Where mail Dovecot sends itself (vacation replies, Sieve redirects) is signed before it leaves
# (`manage.py dovecot_relay`, docker/dovecot/dovecot.conf's submission_host); internal only.
DOVECOT_RELAY_LISTEN = env_str("DOVECOT_RELAY_LISTEN", "127.0.0.1:10027")
# Extra certificate authorities (a PEM file) trusted for the relay's TLS, besides the system's.
SMTP_CA_BUNDLE = env_str("SMTP_CA_BUNDLE")

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = DATA_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if PRODUCTION
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# Security headers; production adds HTTPS-only cookies and HSTS.
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")
if PRODUCTION:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
    # Our own names (portal, API, webmail) are all served over HTTPS by Caddy; partners' webmail
    # hostnames are their domains, not ours. Preloading is the operator's one-way decision.
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
    if not SECURE_HSTS_PRELOAD:
        SILENCED_SYSTEM_CHECKS = ["security.W021"]
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

from django.utils.csp import CSP  # noqa: E402

SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF, CSP.UNSAFE_INLINE],
    "img-src": [CSP.SELF, "data:"],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
    "base-uri": [CSP.SELF],
}

# Client addresses: REMOTE_ADDR unless this many reverse proxies sit in front and append
# to X-Forwarded-For (then the address the outermost trusted proxy saw is used).
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.authentication.ApiKeyAuthentication",
        "api.authentication.BearerTokenAuthentication",
        "api.authentication.CsrfSessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "api.permissions.HasScope",
        "api.permissions.PlanFeature",
    ],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "EXCEPTION_HANDLER": "api.exceptions.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
    "DATETIME_FORMAT": "iso-8601",
    "COERCE_DECIMAL_TO_STRING": False,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Mail Service API",
    "DESCRIPTION": "Sending, inbox, templates, contacts, calendar, labels, usage, API keys, webhooks, "
    "the agent tool server and the hosting partner API. Errors are always {\"detail\": ...}; validation "
    "errors are 422 with \"errors\" per field. Request bodies are typed strictly: a value must have the JSON "
    "type the schema gives it (\"yes\" or 1 is not a boolean, \"10\" is not an integer, 123 is not a string), "
    "and a key the schema does not name is refused (a typo never passes unnoticed), else 422. An empty optional "
    "query parameter (?status=) is the same as none. Paged lists take page from 1 to 1000000; a page past the end "
    "is empty.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "api.schema.error_responses"],
    "GET_LIB_DOC_EXCLUDES": "api.schema.doc_excludes",
    "ENUM_NAME_OVERRIDES": {"LapseActionEnum": "mailcore.partners.models.LapseAction",
                            "PartnerPlanEnum": ["pro", "premium"],
                            "CampaignStatusEnum": ["draft", "sending", "paused", "completed", "cancelled"]},
}

# Session tokens for browser/mobile clients of the JSON API (POST /auth/login).
SESSION_TOKEN_TTL = timedelta(days=env_int("SESSION_TOKEN_TTL_DAYS", 30))
# Sends to an address the caller chooses, per account and hour (429 past them): webhook tests, and
# the confirmation mail each new forwarding rule sends.
WEBHOOK_TESTS_PER_HOUR = env_int("WEBHOOK_TESTS_PER_HOUR", 30)
FORWARDING_CONFIRMATIONS_PER_HOUR = env_int("FORWARDING_CONFIRMATIONS_PER_HOUR", 20)
# Forwarded mail's envelope sender (SRS, mailcore.outbound.srs): the secret of its hash (empty: one
# derived from SECRET_KEY), earlier secrets still accepted for bounces in flight (comma-separated),
# and how many days a rewritten address is accepted back.
SRS_SECRET = env_str("SRS_SECRET")
SRS_OLD_SECRETS = env_list("SRS_OLD_SECRETS")
SRS_VALIDITY_DAYS = env_int("SRS_VALIDITY_DAYS", 21)
# API key usage counts are buffered in memory and written at most this often (seconds).
API_KEY_USAGE_FLUSH_SECONDS = env_int("API_KEY_USAGE_FLUSH_SECONDS", 5)

# Logs: one JSON object per line in production (LOG_FORMAT=json; time, level, logger, message,
# request_id and any extra fields), readable lines in development (LOG_FORMAT=plain).
LOG_FORMAT = env_str("LOG_FORMAT", "json" if PRODUCTION else "plain")
if LOG_FORMAT not in {"json", "plain"}:
    raise ImproperlyConfigured("LOG_FORMAT must be 'json' or 'plain'")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "portal.ops.requestid.RequestIdFilter"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        "json": {"()": "pythonjsonlogger.json.JsonFormatter", "timestamp": True,
                 "format": "%(levelname)s %(name)s %(message)s %(request_id)s",
                 "rename_fields": {"levelname": "level", "name": "logger"}},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["request_id"]}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.server": {"level": "WARNING"}},
}

# /metrics (Prometheus): readable from these networks, or by anyone with the bearer token.
METRICS_NETWORKS = env_list("METRICS_NETWORKS", ["127.0.0.0/8", "::1/128"])
METRICS_TOKEN = env_str("METRICS_TOKEN")

# Serve static files through WhiteNoise straight from the source folders in development.
WHITENOISE_USE_FINDERS = not PRODUCTION
WHITENOISE_AUTOREFRESH = DEBUG

# Mail store: "embedded" (rows in our database; no Dovecot needed) or "imap" (Dovecot, reached
# through its master user: the app logs in as "<mailbox>*<master user>").
MAIL_STORE = env_str("MAIL_STORE", "embedded")
if MAIL_STORE not in {"embedded", "imap"}:
    raise ImproperlyConfigured("MAIL_STORE must be 'embedded' or 'imap'")
IMAP_HOST = env_str("IMAP_HOST", "127.0.0.1")
IMAP_PORT = env_int("IMAP_PORT", 143)
IMAP_TLS = env_bool("IMAP_TLS", False)
IMAP_TIMEOUT_SECONDS = env_int("IMAP_TIMEOUT_SECONDS", 20)
DOVECOT_MASTER_USER = env_str("DOVECOT_MASTER_USER", "appmaster")
DOVECOT_MASTER_PASSWORD = env_str("DOVECOT_MASTER_PASSWORD", "" if PRODUCTION else "dev-master-password")
if PRODUCTION and MAIL_STORE == "imap" and not DOVECOT_MASTER_PASSWORD:
    raise ImproperlyConfigured("MAIL_STORE=imap in production needs DOVECOT_MASTER_PASSWORD")
# Inbound: our LMTP/SMTP listener, and where it hands mail to Dovecot (host:port) in imap mode.
LMTP_LISTEN = env_str("LMTP_LISTEN", "127.0.0.1:2424")
# Where Postfix's port 587 hands authenticated sessions (manage.py submission_intake); internal only.
SUBMISSION_INTAKE_LISTEN = env_str("SUBMISSION_INTAKE_LISTEN", "127.0.0.1:10026")
DOVECOT_LMTP = env_str("DOVECOT_LMTP", "127.0.0.1:24")
# Dovecot's mail directory (its mail_home root), for `manage.py backup` and `restore`; empty: the
# mail is in the database (the embedded store) and the database backup holds it.
DOVECOT_MAIL_DIR = env_str("DOVECOT_MAIL_DIR")
# Key for secrets stored in the database (connected mailboxes' IMAP passwords): a Fernet key
# (32 url-safe base64 bytes). Development derives one from SECRET_KEY; production must set it.
FIELD_ENCRYPTION_KEY = env_str("FIELD_ENCRYPTION_KEY")
if PRODUCTION and not FIELD_ENCRYPTION_KEY:
    raise ImproperlyConfigured("DJANGO_ENV=production needs FIELD_ENCRYPTION_KEY (a Fernet key)")
# The quarantine (protection): a held message is kept QUARANTINE_DAYS days at most, and a mailbox's
# waiting messages take QUARANTINE_MAX_MB at most (the oldest make room).
QUARANTINE_DAYS = env_int("QUARANTINE_DAYS", 30)
QUARANTINE_MAX_MB = env_int("QUARANTINE_MAX_MB", 200)
# Domain trust's reports (trust): the addresses and networks our outbound mail leaves from, so a
# DMARC report's source is told apart as one of our servers or an outside sender; and the largest
# report attachment read once unpacked (zip and gzip bombs stop there).
OUTBOUND_IPS = env_list("OUTBOUND_IPS")
DMARC_REPORT_MAX_BYTES = env_int("DMARC_REPORT_MAX_BYTES", 20 * 1024 * 1024)
# Host names published in customers' DNS records and used by outgoing mail.
MAIL_HOST = env_str("MAIL_HOST", "mail.mailwell.test")
RELAY_HOST = env_str("RELAY_HOST", "relay.mailwell.test")
# MTA-STS (RFC 8461): how long senders may keep a hosted domain's policy (mailcore.domains.mta_sts);
# RFC 8461 allows up to 31557600 s and suggests weeks.
MTA_STS_MAX_AGE_SECONDS = env_int("MTA_STS_MAX_AGE_SECONDS", 604800)
if not 0 < MTA_STS_MAX_AGE_SECONDS <= 31557600:
    raise ImproperlyConfigured("MTA_STS_MAX_AGE_SECONDS must be between 1 and 31557600 (RFC 8461)")
# What mail clients are told (autoconfig, autodiscover, the Apple profile): IMAP over TLS and SMTP
# submission with STARTTLS, both on MAIL_HOST.
MAIL_CLIENT_IMAP_PORT = env_int("MAIL_CLIENT_IMAP_PORT", 993)
MAIL_CLIENT_SUBMISSION_PORT = env_int("MAIL_CLIENT_SUBMISSION_PORT", 587)
# The name of the domain-ownership TXT record (`<prefix>=<token>`): resellers' customers see it in
# their DNS, so it carries no brand unless a platform sets one. Tokens published under an earlier
# prefix keep verifying (DOMAIN_VERIFY_LEGACY_PREFIXES).
DOMAIN_VERIFY_PREFIX = env_str("DOMAIN_VERIFY_PREFIX", "domain-verification")
DOMAIN_VERIFY_LEGACY_PREFIXES = env_list("DOMAIN_VERIFY_LEGACY_PREFIXES", ["mailwell-verify"])
if not all(re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,62}", prefix)
           for prefix in [DOMAIN_VERIFY_PREFIX, *DOMAIN_VERIFY_LEGACY_PREFIXES]):
    raise ImproperlyConfigured("DOMAIN_VERIFY_PREFIX and its legacy prefixes are lower-case letters, digits, - and _")

# The address people and mail clients reach this service at: checkout links, system mails, forwarding
# confirmations, tracking and unsubscribe links. Development follows where `make run` serves (HOST and
# PORT) unless it is set; production has nothing to guess from and refuses to start without it.
PUBLIC_BASE_URL = env_str("PUBLIC_BASE_URL").strip().rstrip("/")
if not PUBLIC_BASE_URL:
    if PRODUCTION:
        raise ImproperlyConfigured("DJANGO_ENV=production needs PUBLIC_BASE_URL: where people reach this service, "
                                   "e.g. https://mail.example.com")
    PUBLIC_BASE_URL = local_base_url(env_str("HOST", "127.0.0.1"), env_int("PORT", 8000))
elif not re.fullmatch(r"https?://[^/?#\s]+", PUBLIC_BASE_URL):
    raise ImproperlyConfigured(f"PUBLIC_BASE_URL must be a scheme and host without a path, got {PUBLIC_BASE_URL!r}")
# The platform's tracking host (open pixels, click redirects): a client domain's own track.<domain>
# is a CNAME to it (the DNS wizard's "tracking" record), used once seen. Defaults to PUBLIC_BASE_URL's host.
TRACKING_HOST = (env_str("TRACKING_HOST") or urlsplit(PUBLIC_BASE_URL).hostname or "").strip().rstrip(".").lower()
# The platform's own sending domain: system mail (verification, resets, partner approval, notices)
# comes From it, with Message-IDs on it, DKIM-signed with its key (its SPF, DKIM and DMARC records
# are on the console's "System mail domain" page). Production must name it; development uses a
# name of the test tree, never localhost.
SYSTEM_MAIL_DOMAIN = env_str("SYSTEM_MAIL_DOMAIN").strip().rstrip(".").lower()
if not SYSTEM_MAIL_DOMAIN:
    if PRODUCTION:
        raise ImproperlyConfigured("DJANGO_ENV=production needs SYSTEM_MAIL_DOMAIN: the domain system mail is sent "
                                   "from and signed for, e.g. example.com")
    SYSTEM_MAIL_DOMAIN = "mailwell.test"
if not re.fullmatch(r"[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?", SYSTEM_MAIL_DOMAIN) or "." not in SYSTEM_MAIL_DOMAIN:
    raise ImproperlyConfigured("SYSTEM_MAIL_DOMAIN must be a domain name such as example.com")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL") or f"{SITE_NAME} <no-reply@{SYSTEM_MAIL_DOMAIN}>"
# Optional GeoIP2 country database (a .mmdb file) for email.opened's location_country.
GEOIP_COUNTRY_DB = env_str("GEOIP_COUNTRY_DB")

# DNS servers for domain verification and DKIM look-ups ("host" or "host:port", comma-separated);
# empty means the system's resolver. Tests point it at a DNS server they run on loopback.
DNS_NAMESERVERS = env_list("DNS_NAMESERVERS")
DNS_TIMEOUT_SECONDS = env_int("DNS_TIMEOUT_SECONDS", 5)

# Inbound protection: rspamd's normal worker (checks) and controller (learning, counts), the
# controller's password, and rspamd's own Redis (per-mailbox Bayes counts). Empty RSPAMD_URL means
# scanning is off, said so on /readyz, the console and `manage.py serve` (docs/protection.md).
RSPAMD_URL = env_str("RSPAMD_URL").strip().rstrip("/")
RSPAMD_CONTROLLER_URL = env_str("RSPAMD_CONTROLLER_URL").strip().rstrip("/")
RSPAMD_PASSWORD = env_str("RSPAMD_PASSWORD")
RSPAMD_REDIS_URL = env_str("RSPAMD_REDIS_URL")
RSPAMD_TIMEOUT_SECONDS = env_int("RSPAMD_TIMEOUT_SECONDS", 20)
# The rspamd program `manage.py serve` starts when RSPAMD_URL is empty (a name on PATH or a path).
RSPAMD_BINARY = env_str("RSPAMD_BINARY", "rspamd")
if PRODUCTION and RSPAMD_CONTROLLER_URL and not RSPAMD_PASSWORD:
    raise ImproperlyConfigured("RSPAMD_CONTROLLER_URL needs RSPAMD_PASSWORD (the controller's password)")
# While rspamd (or clamd behind it) cannot be reached the listener answers 451; once it has been
# unreachable this long, mail is accepted unscanned, marked so (X-Spam-Action: unscanned) and with
# no owner automation run. 0: never accept unscanned mail (docs/decisions.md).
SCANNING_UNSCANNED_AFTER_SECONDS = env_int("SCANNING_UNSCANNED_AFTER_SECONDS", 3600)
# Peers whose XFORWARD (the internet client's address and HELO, from Postfix's before-queue proxy on
# port 25) the listener believes; anyone else is judged by its own address.
INBOUND_XFORWARD_FROM = env_list("INBOUND_XFORWARD_FROM", ["127.0.0.0/8", "::1/128"])

# Request bodies up to 50 MB: a send with the largest plan's 35 MB of attachments, base64-encoded.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 50 * 1024 * 1024)

# Webhooks. Loopback destinations are refused unless this is on (development and tests only;
# private, link-local, multicast and reserved addresses are always refused).
WEBHOOK_ALLOW_PRIVATE = env_bool("WEBHOOK_ALLOW_PRIVATE", False)
if PRODUCTION and WEBHOOK_ALLOW_PRIVATE:
    raise ImproperlyConfigured("WEBHOOK_ALLOW_PRIVATE is for development and tests only")
# Connected mailboxes: their IMAP and SMTP servers are reached only at public addresses (the
# webhooks' policy); loopback only with this on (tests and development only).
CONNECTED_MAILBOX_ALLOW_LOOPBACK = env_bool("CONNECTED_MAILBOX_ALLOW_LOOPBACK", False)
if PRODUCTION and CONNECTED_MAILBOX_ALLOW_LOOPBACK:
    raise ImproperlyConfigured("CONNECTED_MAILBOX_ALLOW_LOOPBACK is for development and tests only")
# How long connecting may wait on the provider's servers, all checks together (seconds).
CONNECTED_MAILBOX_CHECK_SECONDS = env_int("CONNECTED_MAILBOX_CHECK_SECONDS", 5)
# The longest one operation on a connected mailbox's provider may take (reading /inbox, on the
# request path), name look-up and connecting included.
CONNECTED_MAILBOX_SESSION_SECONDS = env_int("CONNECTED_MAILBOX_SESSION_SECONDS", 10)
# Sessions with the providers of one account's connected mailboxes open at once (web requests and
# workers together); past it 429 with Retry-After, so a slow provider cannot take every web worker.
CONNECTED_MAILBOX_SESSIONS_PER_ACCOUNT = env_int("CONNECTED_MAILBOX_SESSIONS_PER_ACCOUNT", 4)
# The longest the worker spends handing one message to a connected mailbox's submission server.
CONNECTED_MAILBOX_SEND_SECONDS = env_int("CONNECTED_MAILBOX_SEND_SECONDS", 30)
# Per account and hour: messages sent through connected mailboxes' own submission servers (they
# reserve none of our quota); past it 429 with Retry-After.
CONNECTED_MAILBOX_SENDS_PER_HOUR = env_int("CONNECTED_MAILBOX_SENDS_PER_HOUR", 200)
# Per account and hour: connection attempts (each logs in to servers the caller named) and
# verification codes mailed to addresses the caller named; past them 429 with Retry-After.
CONNECTED_MAILBOX_CHECKS_PER_HOUR = env_int("CONNECTED_MAILBOX_CHECKS_PER_HOUR", 10)
CONNECTED_MAILBOX_CODES_PER_HOUR = env_int("CONNECTED_MAILBOX_CODES_PER_HOUR", 5)
# Extra certificate authorities (a PEM file) trusted for webhook endpoints, besides the system's.
WEBHOOK_CA_BUNDLE = env_str("WEBHOOK_CA_BUNDLE")
WEBHOOK_TIMEOUT_SECONDS = 10
# Deliveries sent in parallel by one worker, so that a slow endpoint does not hold up the others.
WEBHOOK_CONCURRENCY = env_int("WEBHOOK_CONCURRENCY", 16)

# Payments (billing/providers). PAYMENT_PROVIDER names one provider for every currency (local,
# stripe, paystack) or one per currency ("usd=stripe,ngn=paystack"); local is the embedded default
# and is refused in production.
from billing.providers.registry import providers_by_currency  # noqa: E402

PAYMENT_PROVIDER = env_str("PAYMENT_PROVIDER", "local")
PAYMENT_PROVIDERS = providers_by_currency(PAYMENT_PROVIDER, production=PRODUCTION)
STRIPE_API_KEY = env_str("STRIPE_API_KEY")
STRIPE_WEBHOOK_SECRET = env_str("STRIPE_WEBHOOK_SECRET")
STRIPE_API_BASE = env_str("STRIPE_API_BASE", "https://api.stripe.com")
PAYSTACK_SECRET_KEY = env_str("PAYSTACK_SECRET_KEY")
PAYSTACK_API_BASE = env_str("PAYSTACK_API_BASE", "https://api.paystack.co")
for _currency, _name in PAYMENT_PROVIDERS.items():
    if _name == "stripe" and not (STRIPE_API_KEY and STRIPE_WEBHOOK_SECRET):
        raise ImproperlyConfigured("PAYMENT_PROVIDER uses stripe: set STRIPE_API_KEY and STRIPE_WEBHOOK_SECRET")
    if _name == "paystack" and not PAYSTACK_SECRET_KEY:
        raise ImproperlyConfigured("PAYMENT_PROVIDER uses paystack: set PAYSTACK_SECRET_KEY")
# A newly approved hosting partner's trial, in days.
PARTNER_TRIAL_DAYS = env_int("PARTNER_TRIAL_DAYS", 14)

# Webmail on partners' own hostnames. WEBMAIL_HOST is the platform's webmail name: partners point a
# CNAME at it, and a hostname that resolves there (checked in the background) serves the webmail
# at / with the partner's brand. Those verified names are accepted as Host besides ALLOWED_HOSTS by
# portal.webmail_host.WebmailHostMiddleware (only verified ones: see docs/decisions.md), and Caddy
# asks /internal/tls/allowed before issuing their certificates (docker/caddy/Caddyfile).
WEBMAIL_HOST = env_str("WEBMAIL_HOST", "webmail.mailwell.test").strip().rstrip(".").lower()
if not re.fullmatch(r"[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?", WEBMAIL_HOST) or "." not in WEBMAIL_HOST:
    raise ImproperlyConfigured("WEBMAIL_HOST must be a host name such as webmail.example.com")

# Outbound protection: a send from our relay scoring this much or more (rspamd's scale) is held for
# its account to release or reject (mailcore.sending.held). Integrators' API sends are scored or
# exempt by their plan (Plan.score_api_sends). docs/protection.md.
OUTBOUND_HOLD_AT = env_float("OUTBOUND_HOLD_AT", 10.0)
