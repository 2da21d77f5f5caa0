"""Synapse settings: one file, every knob an environment variable (README lists them all)."""

from __future__ import annotations

import logging
import os
import secrets
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from synapse_site.logs import logging_config, parse_log_format
from synapse_site.paths import BASE_DIR, data_dir, private_dir, private_sqlite_file


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "on"}:
        return True
    if value in {"0", "false", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean: use true/false, 1/0 or on/off.")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a whole number.") from None


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in env_str(name, default).split(",") if item.strip()]


DEBUG = env_bool("DEBUG", False)
DATA_DIR = data_dir()
SECRET_KEY_FILE = DATA_DIR / "secret_key"

# A key is "insecure" when it is short, low-variety, or one of Django's placeholders.
INSECURE_KEY_MARKERS = ("django-insecure", "change-me", "changeme", "secret")


def is_insecure_secret(key: str) -> bool:
    lowered = key.lower()
    return (
        len(key) < 50
        or len(set(key)) < 5
        or any(lowered.startswith(marker) for marker in INSECURE_KEY_MARKERS)
    )


def load_or_create_secret_key(path: Path) -> str:
    """Read the generated key, creating it (owner-only) on the first start."""
    if path.exists():
        return path.read_text().strip()
    private_dir(path.parent)
    key = secrets.token_urlsafe(64)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(key + "\n")
    return key


_env_secret = os.environ.get("SECRET_KEY", "").strip()
if _env_secret:
    if not DEBUG and is_insecure_secret(_env_secret):
        raise ImproperlyConfigured(
            "SECRET_KEY is insecure (shorter than 50 characters, low variety, or a placeholder). "
            "Unset it to use the key generated in data/, or set a long random value."
        )
    SECRET_KEY = _env_secret
else:
    SECRET_KEY = load_or_create_secret_key(SECRET_KEY_FILE)
# Earlier keys, comma-separated, while what they signed or sealed is still in use: sessions,
# and the webhook secrets sealed at rest (core/sealed.py).
SECRET_KEY_FALLBACKS = env_list("SECRET_KEY_FALLBACKS", "")

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "accounts",
    "minds",
    "memories",
    "api",
    "webhooks",
    "dashboard",
    "huey.contrib.djhuey",
    "chat",
    "scheduler",
    "oauth2_provider",
    "connections",
]

MIDDLEWARE = [
    # First, so every answer (a redirect, a 413, a static file) has an id, a log line and metrics.
    "synapse_site.middleware.RequestIdMiddleware",
    "synapse_site.middleware.RequestMetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "synapse_site.middleware.BodySizeLimitMiddleware",
    "synapse_site.middleware.SingleQueryValueMiddleware",
    "synapse_site.middleware.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "dashboard.middleware.CoreNotFoundMiddleware",
    # Last, as django-axes asks: turns a locked-out login form into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "synapse_site.urls"
WSGI_APPLICATION = "synapse_site.wsgi.application"
# The public client calls /memory, not /memory/: routes accept both, nothing redirects.
APPEND_SLASH = False

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
                "dashboard.context_processors.mind_access",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------

DATABASE_URL = env_str("DATABASE_URL", "sqlite:///data/synapse.sqlite3")
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
_db = DATABASES["default"]
if _db["ENGINE"] == "django.db.backends.sqlite3":
    if _db["NAME"] != ":memory:" and not os.path.isabs(_db["NAME"]):
        _db["NAME"] = str(BASE_DIR / _db["NAME"])
    private_dir(Path(_db["NAME"]).parent)
    # Several gunicorn workers share one file: WAL lets readers run beside the writer, the
    # busy timeout makes writers queue instead of failing, and IMMEDIATE takes the write
    # lock at BEGIN so a transaction never has to upgrade (the source of "database is locked").
    # Django's backend, whose BEGIN waits for that lock in short steps (sqlite_backend/).
    _db["ENGINE"] = "synapse_site.sqlite_backend"
    _db["CONN_MAX_AGE"] = 0 if DEBUG else 600
    # NORMAL (in WAL mode) survives a crash of the server processes but may lose the last
    # commits on power loss or an OS crash; FULL syncs the WAL at every commit and does not.
    SQLITE_SYNCHRONOUS = env_str("SYNAPSE_SQLITE_SYNCHRONOUS", "NORMAL").upper()
    if SQLITE_SYNCHRONOUS not in {"NORMAL", "FULL", "EXTRA"}:
        raise ImproperlyConfigured(
            f"SYNAPSE_SQLITE_SYNCHRONOUS={SQLITE_SYNCHRONOUS!r}: use NORMAL, FULL or EXTRA."
        )
    _db["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": (
            "PRAGMA journal_mode=WAL;"
            f"PRAGMA synchronous={SQLITE_SYNCHRONOUS};"
            "PRAGMA busy_timeout=20000;"
            "PRAGMA foreign_keys=ON;"
            # Deleted rows are overwritten with zeros, so a purged memory leaves no bytes.
            "PRAGMA secure_delete=ON;"
            "PRAGMA cache_size=-20000;"
            "PRAGMA temp_store=MEMORY;"
            # A checkpoint cuts the WAL back to this, so one burst of writes leaves no big file.
            "PRAGMA journal_size_limit=67108864;"
        ),
    }
    # Tests use a file too, so threaded race tests see real SQLite locking, not shared cache.
    # SYNAPSE_TEST_DB_SUFFIX lets parallel test runs on one machine use separate files.
    _suffix = env_str("SYNAPSE_TEST_DB_SUFFIX", "")
    _db["TEST"] = {"NAME": str(DATA_DIR / f"test_synapse{_suffix}.sqlite3")}
elif _db["ENGINE"] == "django.db.backends.postgresql":
    # A server restart or failover must not leave a worker holding a dead connection.
    _db["CONN_HEALTH_CHECKS"] = True
    # Tests create test_<name>; the suffix keeps parallel runs on one server apart.
    _db["TEST"] = {"NAME": f"test_{_db['NAME']}{env_str('SYNAPSE_TEST_DB_SUFFIX', '')}"}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Cache ----------------------------------------------------------------------------------

# Rate-limit counters live here. The default, files under data/cache/ (owner-only), is shared
# by every worker of this machine; Redis shares them between machines; locmem:// keeps a
# separate count in each worker process (so N workers allow N times the limit).
CACHE_URL = env_str("CACHE_URL", "")
CACHES: dict[str, dict[str, object]]
if CACHE_URL.startswith(("redis://", "rediss://", "unix://")):
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}
    }
elif CACHE_URL == "locmem://":
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
elif CACHE_URL == "" or CACHE_URL.startswith("file:///"):
    CACHES = {
        "default": {
            "BACKEND": "synapse_site.cache.SharedFileCache",
            "LOCATION": CACHE_URL.removeprefix("file://") or str(DATA_DIR / "cache"),
            "OPTIONS": {"MAX_ENTRIES": 10_000},
        }
    }
else:
    raise ImproperlyConfigured(
        f"CACHE_URL={CACHE_URL!r}: use redis://host:port/db, file:///a/directory, locmem:// "
        "or leave it unset (files in data/cache/)."
    )

# --- Accounts -------------------------------------------------------------------------------

AUTH_USER_MODEL = "accounts.User"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
SYNAPSE_ALLOW_REGISTRATION = env_bool("SYNAPSE_ALLOW_REGISTRATION", True)
# Repeated wrong passwords for one email from one address lock that pair out for a while
# (django-axes, on every login form: synapse_site/lockout.py); 0 turns the lockout off.
SYNAPSE_LOGIN_FAILURE_LIMIT = env_int("SYNAPSE_LOGIN_FAILURE_LIMIT", 5)
SYNAPSE_LOGIN_COOLOFF_MINUTES = env_int("SYNAPSE_LOGIN_COOLOFF_MINUTES", 15)
if SYNAPSE_LOGIN_FAILURE_LIMIT < 0 or SYNAPSE_LOGIN_COOLOFF_MINUTES < 1:
    raise ImproperlyConfigured(
        "SYNAPSE_LOGIN_FAILURE_LIMIT must be 0 (off) or more, "
        "SYNAPSE_LOGIN_COOLOFF_MINUTES 1 or more."
    )
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_ENABLED = SYNAPSE_LOGIN_FAILURE_LIMIT > 0
AXES_FAILURE_LIMIT = max(SYNAPSE_LOGIN_FAILURE_LIMIT, 1)
AXES_COOLOFF_TIME = timedelta(minutes=SYNAPSE_LOGIN_COOLOFF_MINUTES)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# The email is `username` to authenticate() and in both login forms (not USERNAME_FIELD).
AXES_USERNAME_FORM_FIELD = "username"
AXES_USERNAME_CALLABLE = "synapse_site.lockout.attempted_email"
# The client address as the rate limits see it (SYNAPSE_NUM_PROXIES decides X-Forwarded-For).
AXES_CLIENT_IP_CALLABLE = "synapse_site.throttling.client_address"
AXES_LOCKOUT_CALLABLE = "synapse_site.lockout.locked_out_page"
AXES_RESET_ON_SUCCESS = True
# Guesses during a lockout are refused without writing a row, and do not extend it.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
# No table of every successful login: the failures are all the lockout needs.
AXES_DISABLE_ACCESS_LOG = True
# A failure's row keeps the form it came with, masked: a password change form carries two
# passwords besides the old one (`password` itself is always masked).
AXES_SENSITIVE_PARAMETERS = [
    "username",
    "ip_address",
    "old_password",
    "new_password1",
    "new_password2",
    "password1",
    "password2",
]
# Sessions in the database, each row keyed by a hash of the cookie's key (accounts/sessions.py):
# a copy of the database, such as a backup, opens no one's session.
SESSION_ENGINE = "accounts.sessions"
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/dashboard/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

# --- API ------------------------------------------------------------------------------------

SYNAPSE_RATE_LIMIT = env_str("SYNAPSE_RATE_LIMIT", "1200/min")
SYNAPSE_LOGIN_RATE_LIMIT = env_str("SYNAPSE_LOGIN_RATE_LIMIT", "10/min")
_rate = None if SYNAPSE_RATE_LIMIT.lower() == "off" else SYNAPSE_RATE_LIMIT
_login_rate = None if SYNAPSE_LOGIN_RATE_LIMIT.lower() == "off" else SYNAPSE_LOGIN_RATE_LIMIT
# OAuth client registrations (POST /oauth/register) per client address.
SYNAPSE_OAUTH_REGISTER_RATE_LIMIT = env_str("SYNAPSE_OAUTH_REGISTER_RATE_LIMIT", "20/hour")
_register_rate = (
    None
    if SYNAPSE_OAUTH_REGISTER_RATE_LIMIT.lower() == "off"
    else SYNAPSE_OAUTH_REGISTER_RATE_LIMIT
)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Mind Keys first: it answers only for `Bearer mk_…` and leaves every other token to JWT.
        "api.authentication.MindKeyAuthentication",
        "api.authentication.BearerJWTAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["api.renderers.ORJSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["api.parsers.JSONParser"],
    "DEFAULT_THROTTLE_CLASSES": ["synapse_site.throttling.CredentialRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "credential": _rate,
        "login": _login_rate,
        "oauth_register": _register_rate,
    },
    "DEFAULT_SCHEMA_CLASS": "api.schema.SynapseAutoSchema",
    "EXCEPTION_HANDLER": "synapse_site.errors.api_exception_handler",
    # `?format=` belongs to recall and export, not to renderer selection.
    "URL_FORMAT_OVERRIDE": None,
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    # Anonymous clients (login, register) are told apart by address. X-Forwarded-For is
    # trusted only as far as SYNAPSE_NUM_PROXIES proxies of ours put it there; with 0 it is
    # ignored, so nobody gets a fresh login bucket by sending the header.
    "NUM_PROXIES": env_int("SYNAPSE_NUM_PROXIES", 0),
}

SIMPLE_JWT = {
    "ACCESS_TOKEN_LIFETIME": timedelta(minutes=env_int("SYNAPSE_JWT_ACCESS_MINUTES", 15)),
    "REFRESH_TOKEN_LIFETIME": timedelta(days=env_int("SYNAPSE_JWT_REFRESH_DAYS", 7)),
    "AUTH_HEADER_TYPES": ("Bearer",),
    "USER_ID_FIELD": "id",
    "USER_ID_CLAIM": "user_id",
    "UPDATE_LAST_LOGIN": True,
    # Tokens carry a digest of the password hash: a password change revokes them all.
    "CHECK_REVOKE_TOKEN": True,
}

# --- OAuth for remote MCP clients (connections/, mcp_server/oauth.py) -----------------------

# Hosted assistants register themselves (RFC 7591), a person consents in the dashboard and
# picks a mind, and the app's tokens act as that mind's agent on /mcp only.
OAUTH2_PROVIDER = {
    "SCOPES": {"mcp": "Act as one mind's agent on its MCP endpoint"},
    "DEFAULT_SCOPES": ["mcp"],
    "ACCESS_TOKEN_EXPIRE_SECONDS": 60 * 60,
    "REFRESH_TOKEN_EXPIRE_SECONDS": 30 * 24 * 60 * 60,
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    # Each refresh gives a new refresh token; replaying a used one ends the whole family.
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "PKCE_REQUIRED": True,
    "REQUEST_APPROVAL_PROMPT": "force",
    "OAUTH2_VALIDATOR_CLASS": "connections.oauth.Validator",
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https"],
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": [
        "none",
        "client_secret_post",
        "client_secret_basic",
    ],
    "DCR_ENABLED": True,
    # Open registration, as remote MCP clients expect; rate-limited per address
    # (SYNAPSE_OAUTH_REGISTER_RATE_LIMIT) and worth nothing until a person consents.
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_MATCHING": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
}
# Named, as a swappable model's setting must be for a migration that points at it.
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth2_provider.Application"
# DOT's warning that http redirect URIs are allowed: they are, for loopback only, which
# connections/rules.py enforces at registration and the validator at every request.
SILENCED_SYSTEM_CHECKS = ["oauth2_provider.W008"]

SPECTACULAR_SETTINGS = {
    "TITLE": "Synapse",
    "DESCRIPTION": "Long-term memory for LLM agents: store, recall, search, verify.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    # No links nested in the operations' buttons (deep links), and no call to the public
    # validator: the page works offline.
    "SWAGGER_UI_SETTINGS": {"deepLinking": False, "validatorUrl": None},
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "PREPROCESSING_HOOKS": ["api.schema.canonical_paths"],
    # Two `status` enums (a webhook delivery's, a scheduled run's), each named for what it is.
    "ENUM_NAME_OVERRIDES": {
        "DeliveryStatusEnum": "api.webhooks.STATUSES",
        "RunStatusEnum": "api.scheduler.RUN_STATUSES",
    },
}

# Bodies above this answer 413 (a memory's content tops out at 50,000 characters).
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("SYNAPSE_MAX_BODY_BYTES", 1024 * 1024)
# What one mind may hold (its memories, and the UTF-8 bytes of their content) and how many
# minds one account may own; a write past a quota is a 409. 0 means no limit.
SYNAPSE_MAX_MEMORIES_PER_MIND = env_int("SYNAPSE_MAX_MEMORIES_PER_MIND", 10_000)
SYNAPSE_MAX_MIND_BYTES = env_int("SYNAPSE_MAX_MIND_BYTES", 50 * 1024 * 1024)
SYNAPSE_MAX_MINDS_PER_USER = env_int("SYNAPSE_MAX_MINDS_PER_USER", 50)
# The bytes of earlier values one mind's audit trail keeps. Never refuses a write: past it,
# the oldest events' values are folded (memories/audit.py). 0 means no limit.
SYNAPSE_MAX_HISTORY_BYTES = env_int("SYNAPSE_MAX_HISTORY_BYTES", SYNAPSE_MAX_MIND_BYTES)
# A credential in a memory's content or tags (memories/secrets.py): `redact` stores it as
# "[redacted: <kind>]" with a warning, `refuse` answers 400, `allow` stores it as sent.
SYNAPSE_SECRETS = env_str("SYNAPSE_SECRETS", "redact").lower()
if SYNAPSE_SECRETS not in {"redact", "refuse", "allow"}:
    raise ImproperlyConfigured(f"SYNAPSE_SECRETS={SYNAPSE_SECRETS!r}: use redact, refuse or allow.")

# --- Search by meaning ----------------------------------------------------------------------

# numpy scores a question against a mind's vectors with one BLAS thread: the web workers are
# the parallelism, and BLAS threads on top of them only fight them for the same cores. Set
# here, before anything imports numpy.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# `local`: the bundled multilingual model on this machine's CPU (memories/embeddings/);
# `local-english`: the bundled English-only one; `off`; or the base URL of an
# OpenAI-compatible embeddings API, with the model it should use and its key.
SYNAPSE_EMBEDDINGS = env_str("SYNAPSE_EMBEDDINGS", "local")
SYNAPSE_EMBEDDINGS_MODEL = env_str("SYNAPSE_EMBEDDINGS_MODEL", "")
SYNAPSE_EMBEDDINGS_KEY = env_str("SYNAPSE_EMBEDDINGS_KEY", "")
SYNAPSE_EMBEDDINGS_TIMEOUT = env_int("SYNAPSE_EMBEDDINGS_TIMEOUT", 30)
# A search waits this long for its question's vector, then searches by keyword alone: short,
# since a web worker waits with it (the background worker's documents wait the one above).
SYNAPSE_EMBEDDINGS_QUERY_TIMEOUT = env_int("SYNAPSE_EMBEDDINGS_QUERY_TIMEOUT", 2)
# An OpenAI-compatible chat completions URL asked to confirm each contradiction the judge
# finds (memories/hygiene/contradictions.py); empty: the judge alone decides.
SYNAPSE_HYGIENE_CHAT_URL = env_str("SYNAPSE_HYGIENE_CHAT_URL", "")
SYNAPSE_HYGIENE_CHAT_MODEL = env_str("SYNAPSE_HYGIENE_CHAT_MODEL", "")
SYNAPSE_HYGIENE_CHAT_KEY = env_str("SYNAPSE_HYGIENE_CHAT_KEY", "")
SYNAPSE_HYGIENE_CHAT_TIMEOUT = env_int("SYNAPSE_HYGIENE_CHAT_TIMEOUT", 10)
SYNAPSE_EMBEDDINGS_THREADS = env_int("SYNAPSE_EMBEDDINGS_THREADS", 1)
# The most tokens of one text the embeddings API takes (512: a text-embeddings server with an
# e5 or bge model; 8191: OpenAI): each text is cut to fewer UTF-8 bytes than this.
SYNAPSE_EMBEDDINGS_MAX_TOKENS = env_int("SYNAPSE_EMBEDDINGS_MAX_TOKENS", 512)
if SYNAPSE_EMBEDDINGS.lower() in {"local", "local-english", "off"}:
    SYNAPSE_EMBEDDINGS = SYNAPSE_EMBEDDINGS.lower()
    if SYNAPSE_EMBEDDINGS != "off" and SYNAPSE_EMBEDDINGS_MODEL:
        raise ImproperlyConfigured(
            "SYNAPSE_EMBEDDINGS_MODEL names a model of an embeddings API: set "
            "SYNAPSE_EMBEDDINGS to that API's base URL, or unset SYNAPSE_EMBEDDINGS_MODEL."
        )
else:
    try:
        _embeddings_url = urlsplit(SYNAPSE_EMBEDDINGS)
        _embeddings_url_ok = (
            _embeddings_url.scheme in {"http", "https"}
            and bool(_embeddings_url.hostname)
            and _embeddings_url.port != 0
            and not (_embeddings_url.username or _embeddings_url.query or _embeddings_url.fragment)
        )
    except ValueError:  # a port that is not a number
        _embeddings_url_ok = False
    if not _embeddings_url_ok:
        raise ImproperlyConfigured(
            f"SYNAPSE_EMBEDDINGS={SYNAPSE_EMBEDDINGS!r}: use local, local-english, off, or the "
            "base URL of an "
            "OpenAI-compatible embeddings API such as http://localhost:11434/v1 (no user, "
            "query or fragment in it: the key goes in SYNAPSE_EMBEDDINGS_KEY)."
        )
    if not SYNAPSE_EMBEDDINGS_MODEL:
        raise ImproperlyConfigured(
            "SYNAPSE_EMBEDDINGS is an embeddings API's URL: set SYNAPSE_EMBEDDINGS_MODEL to the "
            "model it should use (nomic-embed-text, text-embedding-3-small, ...)."
        )
if (
    SYNAPSE_EMBEDDINGS_TIMEOUT < 1
    or SYNAPSE_EMBEDDINGS_QUERY_TIMEOUT < 1
    or SYNAPSE_EMBEDDINGS_THREADS < 1
):
    raise ImproperlyConfigured(
        "SYNAPSE_EMBEDDINGS_TIMEOUT, SYNAPSE_EMBEDDINGS_QUERY_TIMEOUT (seconds) and "
        "SYNAPSE_EMBEDDINGS_THREADS must be 1 or more."
    )
if SYNAPSE_EMBEDDINGS_MAX_TOKENS < 64:
    raise ImproperlyConfigured("SYNAPSE_EMBEDDINGS_MAX_TOKENS must be 64 or more.")

# --- Background work ------------------------------------------------------------------------

# The queue of background tasks (huey, memories/tasks.py): a SQLite file of its own in
# SYNAPSE_DATA_DIR by default (`sqlite:////path/jobs.sqlite3` names another), or Redis
# (`redis://host:6379/0`) when workers run on other hosts. The work itself (the embedding
# outbox) is kept in the main database either way: a lost queue loses no work.
SYNAPSE_JOBS_URL = env_str("SYNAPSE_JOBS_URL", "")
_jobs_url = urlsplit(SYNAPSE_JOBS_URL)
if not SYNAPSE_JOBS_URL:
    _jobs_storage = {"huey_class": "huey.SqliteHuey", "filename": str(DATA_DIR / "jobs.sqlite3")}
elif SYNAPSE_JOBS_URL.startswith("sqlite:///") and len(SYNAPSE_JOBS_URL) > len("sqlite:///"):
    # As in DATABASE_URL: sqlite:////absolute/path, or sqlite:///path relative to the project.
    _jobs_storage = {
        "huey_class": "huey.SqliteHuey",
        "filename": str(BASE_DIR / SYNAPSE_JOBS_URL.removeprefix("sqlite:///")),
    }
elif _jobs_url.scheme in {"redis", "rediss", "unix"}:
    _jobs_storage = {"huey_class": "huey.RedisHuey", "url": SYNAPSE_JOBS_URL}
else:
    raise ImproperlyConfigured(
        f"SYNAPSE_JOBS_URL={SYNAPSE_JOBS_URL!r}: leave it unset (a SQLite file in "
        "SYNAPSE_DATA_DIR), or use sqlite:////absolute/path.sqlite3 or redis://host:6379/1."
    )
if _jobs_storage["huey_class"] == "huey.SqliteHuey":
    # huey opens its file as Django loads, before any command runs: `migrate`, `check` and the
    # worker itself must work on a fresh clone whose database is elsewhere (no data/ yet).
    private_dir(Path(_jobs_storage["filename"]).parent)
    private_sqlite_file(Path(_jobs_storage["filename"]))
HUEY = {
    "name": "synapse",
    **_jobs_storage,
    # Tasks report through the database and the log; nothing reads a task's return value.
    "results": False,
    "immediate": False,
    "utc": True,
    # `manage.py run_huey`: one worker thread per process; run more processes to scale. An idle
    # worker looks at a SQLite queue at least every half second (Redis wakes it at once).
    "consumer": {"workers": 1, "worker_type": "thread", "max_delay": 0.5},
}

# --- Webhooks ------------------------------------------------------------------------------

# Destinations on loopback, private, link-local or other non-public addresses are refused, at
# registration and again at each delivery, unless this is on (a receiver on this host or the
# local network). Plain http is accepted only for such destinations, and only then.
SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = env_bool("SYNAPSE_WEBHOOKS_ALLOW_PRIVATE", False)

# --- Static files, i18n, security -----------------------------------------------------------

STATIC_URL = "/static/"
# Where each face lives (synapse_site/faces.py); the API answers every other path.
FACE_PREFIXES = {
    "admin": "/admin/",
    "dashboard": "/dashboard/",
    "accounts": "/accounts/",
    "static": STATIC_URL,
    "api_docs": "/api/docs",
}
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
# Behind TLS (a proxy that sets X-Forwarded-Proto), cookies are sent over HTTPS only.
SYNAPSE_BEHIND_TLS = env_bool("SYNAPSE_BEHIND_TLS", False)
if SYNAPSE_BEHIND_TLS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = True
    SECURE_HSTS_SECONDS = 60 * 60 * 24 * 365
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True

# --- Logs and metrics ------------------------------------------------------------------------

# `text`: each line as logged (gunicorn's access log gives one per request); `json`: one JSON
# object per line with the request's id and mind (synapse_site/logs.py).
try:
    LOG_FORMAT = parse_log_format(env_str("LOG_FORMAT", "text"))
except ValueError as exc:
    raise ImproperlyConfigured(str(exc)) from None
LOGGING = logging_config(log_format=LOG_FORMAT, level=env_str("LOG_LEVEL", "INFO"))
if LOG_FORMAT == "json":
    # Python's warnings through the log too, so that every line on stderr is JSON.
    logging.captureWarnings(True)

# GET /metrics answers only with this as its Bearer token; unset, it is a 404.
SYNAPSE_METRICS_TOKEN = env_str("SYNAPSE_METRICS_TOKEN", "")
if SYNAPSE_METRICS_TOKEN and len(SYNAPSE_METRICS_TOKEN) < 16:
    raise ImproperlyConfigured(
        "SYNAPSE_METRICS_TOKEN is shorter than 16 characters: use a long random value, such as "
        "the output of: python3 -c 'import secrets; print(secrets.token_urlsafe(32))'."
    )
