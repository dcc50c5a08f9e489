"""The one set of secret rules: which names hold credentials and which strings are shaped like one.

Every place that decides what a secret is reads it here: the redaction pass (`verifier.redact`) over the results,
the report, JUnit and the terminal; the custom-grader contract's refusal of credential-looking metric names
(`verifier.custom`); the run config's masking of agent and environment kwargs. Two sets that disagreed let an
`sk-...` key through one and an `hf_...` token through the other.

A name is a credential name by its parts (`DB_PASS`, `SERVICE_PWD`, `STRIPE_SK`, `githubToken`, `PGPASSWORD`).
A value is a secret by its shape (a provider key prefix, a JWT, a URL that carries a key) or because it is the
value of a credential-named variable or kwarg. A filesystem path is neither: a long path with digits in it is not
key material, so nothing here guesses secrets from length and character mix alone.
"""

from __future__ import annotations

import re

REDACTED = "[REDACTED]"

# ---------------------------------------------------------------------------------------------------------------
# Names

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NON_ALNUM = re.compile(r"[^A-Za-z0-9]+")

# Usage figures and tokenizer settings, not credentials.
_TOKEN_COUNT = re.compile(r"tokens?_?(?:count|limit|usage)|max_?tokens|tokenizers?", re.IGNORECASE)
_TOKEN_COUNT_NAMES = frozenset(
    {
        "completion_tokens",
        "input_tokens",
        "n_input_tokens",
        "n_output_tokens",
        "output_tokens",
        "prompt_tokens",
        "last_token_usage",
        "token_count",
        "tokens",
        "total_tokens",
    }
)
# A part anywhere in the name makes it a credential name.
_SENSITIVE_PARTS = frozenset(
    {
        "auth",
        "oauth",
        "authorization",
        "bearer",
        "credential",
        "credentials",
        "key",
        "password",
        "passwd",
        "passphrase",
        "private",
        "secret",
        "token",
        "webhook",
    }
)
# A part that names a credential only as the last of several (`DB_PASS`, `SERVICE_PWD`, `STRIPE_SK`,
# `SENTRY_DSN`, `GITLAB_PAT`); alone (`pass`, `PWD`) it is a word or the shell's working directory.
_SENSITIVE_LAST = frozenset({"pass", "pwd", "sk", "dsn", "pat"})
_NOT_CREDENTIAL_NAMES = frozenset({"oldpwd"})
# Substrings of the name run together (`PGPASSWORD`, `MYAPIKEY`, `awsSessionToken`).
_SENSITIVE_COMPACT = (
    "apikey",
    "accesskey",
    "privatekey",
    "sessiontoken",
    "password",
    "passwd",
    "passphrase",
    "secret",
    "credential",
)
# Metric-shaped names: `<auth|secret|token>_<measure>` describe how a skill treats secrets, not a secret.
_METRIC_SHAPED_FIRST = frozenset({"auth", "secret", "token"})
_METRIC_SHAPED_SECOND = frozenset(
    {
        "accuracy",
        "compliance",
        "count",
        "coverage",
        "efficiency",
        "handling",
        "leakage",
        "precision",
        "quality",
        "rate",
        "ratio",
        "recall",
        "safety",
        "score",
        "usage",
    }
)


def name_parts(name: str) -> list[str]:
    """Lowercase words of a name, split at underscores, dashes, dots and camelCase."""
    split = _CAMEL_BOUNDARY.sub("_", name)
    return [part for part in _NON_ALNUM.split(split.lower()) if part]


def is_credential_name(name: str) -> bool:
    """True for `OPENAI_API_KEY`, `github_token`, `PGPASSWORD`, `DB_PASS`, `SERVICE_PWD`, `STRIPE_SK`, `SENTRY_DSN`;
    False for `MAX_TOKENS`, `secret_handling`, `token_efficiency`, `PWD`, `AUTH_MODE` is one (its value is masked
    only when it is secret-shaped: see `verifier.redact`)."""
    parts = name_parts(name)
    if not parts:
        return False
    normalized = "_".join(parts)
    compact = "".join(parts)
    if normalized in _TOKEN_COUNT_NAMES or normalized in _NOT_CREDENTIAL_NAMES or _TOKEN_COUNT.search(normalized):
        return False
    if len(parts) == 2 and parts[0] in _METRIC_SHAPED_FIRST and parts[1] in _METRIC_SHAPED_SECOND:
        return False
    if any(part in _SENSITIVE_PARTS for part in parts):
        return True
    if len(parts) > 1 and parts[-1] in _SENSITIVE_LAST:
        return True
    if compact.endswith(("token", "webhookurl")) or compact.startswith("oauth"):
        return True
    return any(marker in compact for marker in _SENSITIVE_COMPACT)


# ---------------------------------------------------------------------------------------------------------------
# Shapes

_B = r"(?<![A-Za-z0-9])"  # not glued to the end of a longer word

# (pattern, replacement): the replacement keeps any prefix group so the text still reads.
TOKEN_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, flags), replacement)
    for pattern, flags, replacement in (
        (r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.S, REDACTED),
        (_B + r"sk-[A-Za-z0-9_-]{8,}", 0, REDACTED),  # OpenAI, Anthropic, DeepSeek, ... (the security check's rule)
        (_B + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}|" + _B + r"whsec_[A-Za-z0-9]{16,}", 0, REDACTED),  # Stripe
        (_B + r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}", 0, REDACTED),
        (_B + r"github_pat_[A-Za-z0-9_]{20,}", 0, REDACTED),
        (_B + r"glpat-[A-Za-z0-9_-]{16,}", 0, REDACTED),
        (_B + r"(?:AKIA|ASIA)[A-Z0-9]{12,}(?![A-Z0-9])", 0, REDACTED),
        (_B + r"xox[abprs]-[A-Za-z0-9-]{10,}|" + _B + r"xapp-[A-Za-z0-9-]{10,}", 0, REDACTED),
        (r"(hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9/_-]+", 0, r"\1" + REDACTED),
        (r"(discord(?:app)?\.com/api/webhooks/)[A-Za-z0-9/_-]+", 0, r"\1" + REDACTED),
        (_B + r"AIza[0-9A-Za-z_-]{30,}", 0, REDACTED),
        (_B + r"nvapi-[A-Za-z0-9_-]{8,}", 0, REDACTED),
        (_B + r"hf_[A-Za-z0-9]{20,}", 0, REDACTED),
        (_B + r"(?:npm_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_-]{40,}|ya29\.[A-Za-z0-9_-]{20,})", 0, REDACTED),
        (_B + r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}", 0, REDACTED),  # SendGrid
        (_B + r"(?:crsr_[A-Za-z0-9_-]{8,}|sha256~[A-Za-z0-9_-]{8,})", 0, REDACTED),  # Cursor, OpenShift
        (r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*", 0, REDACTED),  # JWT
        (r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{12,}", 0, r"\1" + REDACTED),
        (r"(?i)(\bauthorization\s*[:=]\s*)(?!bearer\b)[^\s'\",;]{8,}", 0, r"\1" + REDACTED),
        (r"(://[^/\s:@'\"]+:)[^/\s@'\"]{3,}(@)", 0, r"\1" + REDACTED + r"\2"),  # scheme://user:password@host
        # scheme://KEY@host: a key as the user part (Sentry DSNs, tokens in git remotes): letters and digits, 16+.
        (r"(://)(?=[A-Za-z0-9_-]*[0-9])(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{16,}(@)", 0, r"\1" + REDACTED + r"\2"),
        (
            r"(?i)((?:api[_-]?key|access[_-]?key|secret[_-]?key|secret|password|passwd|token|auth)\s*[=:]\s*['\"]?)"
            r"(?!\[REDACTED\])[^\s'\",;&]{4,}",
            0,
            r"\1" + REDACTED,
        ),
    )
)

# A text is scanned for secrets once, as a whole: each TOKEN_PATTERNS row needs one of these to match (a test
# checks a sample of every row), so text with none of them skips the substitutions. Literal-prefixed patterns,
# because the regex engine scans a literal prefix fast and an alternation slowly. `LOWER_NEEDLES` are searched in
# the casefolded text.
NEEDLES: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        r"PRIVATE KEY-----",
        r"sk-[A-Za-z0-9_-]{8}",
        r"[sr]k_(?:live|test)_",
        r"whsec_",
        r"gh[pousr]_[A-Za-z0-9]{20}",
        r"github_pat_",
        r"glpat-",
        r"AKIA",
        r"ASIA",
        r"xox[abprs]-",
        r"xapp-",
        r"hooks\.slack\.com/",
        r"/api/webhooks/",
        r"AIza",
        r"nvapi-",
        r"hf_[A-Za-z0-9]{20}",
        r"npm_",
        r"pypi-",
        r"ya29\.",
        r"SG\.",
        r"crsr_",
        r"sha256~",
        r"eyJ",
        r"://[^/\s@'\"]+@",
    )
)
LOWER_NEEDLES: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        r"bearer",
        r"authorization",
        r"key\s*[=:]",
        r"secret\s*[=:]",
        r"passw(?:or)?d\s*[=:]",
        r"token\s*[=:]",
        r"auth\s*[=:]",
    )
)


# For a short text (a key, a name, a table cell) one search of all the needles at once costs less than a search of
# each: 0.5-2 us against 4-6 us at up to 32 characters; longer texts are where the literal prefixes pay.
SHORT_TEXT = 32
_ANY_NEEDLE = re.compile("|".join(f"(?:{needle.pattern})" for needle in NEEDLES))
_ANY_LOWER_NEEDLE = re.compile("|".join(f"(?:{needle.pattern})" for needle in LOWER_NEEDLES))


def may_hold_token(text: str) -> bool:
    """False only when no token pattern can match `text` (its needles are absent)."""
    if len(text) <= SHORT_TEXT:
        return _ANY_NEEDLE.search(text) is not None or _ANY_LOWER_NEEDLE.search(text.casefold()) is not None
    if any(needle.search(text) for needle in NEEDLES):
        return True
    folded = text.casefold()
    return any(needle.search(folded) for needle in LOWER_NEEDLES)


def redact_tokens(text: str) -> str:
    """`text` with every token-shaped string replaced by `[REDACTED]`."""
    if not may_hold_token(text):
        return text
    for pattern, replacement in TOKEN_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def has_token_shape(text: str) -> bool:
    """Whether `text` holds a string shaped like a credential (a key prefix, a JWT, a URL carrying a key, ...)."""
    return may_hold_token(text) and any(pattern.search(text) for pattern, _ in TOKEN_PATTERNS)
