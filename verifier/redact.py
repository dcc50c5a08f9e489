"""One redaction pass over everything we write or print: no secret reaches a file, JUnit or the terminal.

What counts as a secret: the values of credential-looking variables in the host environment (`*_KEY`, `*_TOKEN`,
`*SECRET*`, `*PASSWORD*`, provider keys, ...), the values of credential-looking `--ek`/agent kwargs, and anything
shaped like a token (`sk-...`, `ghp_...`, `AKIA...`, `xoxb-...`, `Bearer ...`, private key blocks, URL passwords).
An agent or grader can print those every way it likes (an env dump, stderr, reward details, a traceback), so the
pass runs where our output leaves the process: the results tree writer, the JUnit properties and failure text,
the terminal summary. Values too short or too plain to be secrets (`true`, `default`) are left alone, since
replacing them would corrupt ordinary fields.

Pure standard library (plus the credential-name rules in `verifier.custom`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from verifier.custom import is_credential_field_name, looks_like_credential

REDACTED = "[REDACTED]"
MIN_SECRET_LENGTH = 8
# A document is scanned for secrets once, as the text of all its strings: each TOKEN_PATTERNS row needs one of
# these to match (a test checks a sample of every row), so text with none of them is left alone without running
# fifteen substitutions over every string. Literal-prefixed patterns, because the regex engine scans a literal
# prefix fast and an alternation slowly. `_LOWER_NEEDLES` are searched in the casefolded text.
_NEEDLES: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        r"PRIVATE KEY-----",
        r"sk-(?:proj-|ant-|test-|live-)?[A-Za-z0-9_-]{12}",
        r"gh[pousr]_[A-Za-z0-9]{20}",
        r"github_pat_",
        r"glpat-",
        r"AKIA",
        r"ASIA",
        r"xox[abprs]-",
        r"AIza",
        r"nvapi-",
        r"hf_[A-Za-z0-9]{24}",
        r"eyJ",
        r"://[^/\s:@'\"]+:[^/\s@'\"]{3,}@",
    )
)
_LOWER_NEEDLES: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        r"bearer",
        r"authorization",
        r"key\s*[=:]",
        r"secret\s*[=:]",
        r"passw(?:or)?d\s*[=:]",
        r"token\s*[=:]",
    )
)
# Plain lowercase words this long are passphrases rather than config values.
MIN_PLAIN_SECRET_LENGTH = 16
# Short strings (keys, statuses, names) repeat across thousands of trials: their redaction is remembered, up to a
# bound, so writing 20,000 trials does not run every pattern over `"passed"` 20,000 times.
CACHED_TEXT_LENGTH = 64
MAX_CACHED = 100_000

_CREDENTIAL_NAME = re.compile(
    r"PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL|(?:^|_)O?AUTH(?:$|_|TOKEN|KEY)|(?:^|_)PAT$",
    re.IGNORECASE,
)
_TOKEN_COUNT_NAME = re.compile(r"TOKENS?_?(COUNT|LIMIT|USAGE)|MAX_?TOKENS|TOKENIZERS?", re.IGNORECASE)

# (pattern, replacement): the replacement keeps any prefix group so the text still reads.
TOKEN_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, flags), replacement)
    for pattern, flags, replacement in (
        (r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.S, REDACTED),
        (r"(?<![A-Za-z0-9])sk-(?:proj-|ant-|test-|live-)?[A-Za-z0-9_-]{12,}", 0, REDACTED),
        (r"(?<![A-Za-z0-9])(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}", 0, REDACTED),
        (r"(?<![A-Za-z0-9])github_pat_[A-Za-z0-9_]{20,}", 0, REDACTED),
        (r"(?<![A-Za-z0-9])glpat-[A-Za-z0-9_-]{16,}", 0, REDACTED),
        (r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])", 0, REDACTED),
        (r"(?<![A-Za-z0-9])xox[abprs]-[A-Za-z0-9-]{10,}", 0, REDACTED),
        (r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{30,}", 0, REDACTED),
        (r"(?<![A-Za-z0-9])nvapi-[A-Za-z0-9_-]{12,}", 0, REDACTED),
        (r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{24,}", 0, REDACTED),
        (r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", 0, REDACTED),
        (r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{12,}", 0, r"\1" + REDACTED),
        (r"(?i)(\bauthorization\s*[:=]\s*)(?!bearer\b)[^\s'\",;]{8,}", 0, r"\1" + REDACTED),
        (r"(://[^/\s:@'\"]+:)[^/\s@'\"]{3,}(@)", 0, r"\1" + REDACTED + r"\2"),
        (
            r"(?i)(\b(?:api[_-]?key|access[_-]?key|secret[_-]?key|secret|password|passwd|token)\s*[=:]\s*['\"]?)"
            r"(?!\[REDACTED\])[^\s'\",;&]{6,}",
            0,
            r"\1" + REDACTED,
        ),
    )
)


def is_credential_variable(name: str) -> bool:
    """Whether an environment variable's name says its value is a credential (`OPENAI_API_KEY`, `PGPASSWORD`)."""
    if _TOKEN_COUNT_NAME.search(name):
        return False
    return is_credential_field_name(name) or bool(_CREDENTIAL_NAME.search(name))


def _secret_shaped(value: str) -> bool:
    """Long enough and varied enough that replacing it everywhere cannot corrupt an ordinary field."""
    value = value.strip()
    if len(value) < MIN_SECRET_LENGTH:
        return False
    if value.isalpha() and value.islower() and len(value) < MIN_PLAIN_SECRET_LENGTH:
        return False
    return not value.isdigit() or len(value) >= MIN_PLAIN_SECRET_LENGTH


def environment_secrets(environ: Mapping[str, str]) -> list[str]:
    """Values of credential-looking variables in an environment (the host's, usually)."""
    return [value for name, value in environ.items() if is_credential_variable(name) and _secret_shaped(value)]


def kwarg_secrets(kwargs: Mapping[str, Any]) -> list[str]:
    """Values of kwargs (`--ek`, agent kwargs) whose name or value looks like a credential."""
    found = []
    for key, value in kwargs.items():
        text = str(value)
        if (looks_like_credential(str(key)) or looks_like_credential(text)) and len(text.strip()) >= 4:
            found.append(text)
    return found


class Redactor:
    """Replaces known secret values and token-shaped strings with `[REDACTED]` in text and in JSON-like data."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        forms: set[str] = set()
        for secret in secrets:
            secret = secret.strip()
            if not secret:
                continue
            forms.add(secret)
            forms.add(json.dumps(secret)[1:-1])  # as it appears inside a JSON string
            forms.add(json.dumps(secret, ensure_ascii=False)[1:-1])
        ordered = sorted(forms, key=len, reverse=True)
        self._values = re.compile("|".join(re.escape(f) for f in ordered)) if ordered else None
        self._short: dict[str, str] = {}
        self._credential_keys: dict[str, bool] = {}
        self._plain_keys: set[str] = set()  # keys seen to need nothing: no token inside, not credential-named

    @classmethod
    def from_environment(cls, environ: Mapping[str, str], kwargs: Iterable[Mapping[str, Any]] = ()) -> Redactor:
        values = environment_secrets(environ)
        for mapping in kwargs:
            values.extend(kwarg_secrets(mapping))
        return cls(values)

    def text(self, text: str) -> str:
        if len(text) > CACHED_TEXT_LENGTH:
            return self._redact_text(text)
        done = self._short.get(text)
        if done is None:
            done = self._redact_text(text)
            if len(self._short) < MAX_CACHED:
                self._short[text] = done
        return done

    def _credential_key(self, key: str) -> bool:
        known = self._credential_keys.get(key)
        if known is None:
            known = looks_like_credential(key)
            if len(self._credential_keys) < MAX_CACHED:
                self._credential_keys[key] = known
        return known

    def _redact_text(self, text: str) -> str:
        if self._values is not None:
            text = self._values.sub(REDACTED, text)
        for pattern, replacement in TOKEN_PATTERNS:
            text = pattern.sub(replacement, text)
        return text

    def value(self, data: Any) -> Any:
        """A copy of JSON-like data with every string redacted; credential-named keys lose their string values."""
        if isinstance(data, str):
            return self.text(data)
        if isinstance(data, Mapping):
            redacted = {}
            for key, item in data.items():
                name = self.text(str(key))
                if isinstance(item, str) and item and self._credential_key(str(key)):
                    redacted[name] = REDACTED
                else:
                    redacted[name] = self.value(item)
            return redacted
        if isinstance(data, (list, tuple)):
            return [self.value(item) for item in data]
        return data

    def scrub(self, data: Any) -> Any:
        """`data` itself when nothing in it can hold a secret, else a redacted copy (`value`).

        Why: writing 20,000 trials walked and copied every string of every document through fifteen patterns. Here
        the strings are gathered in one walk and scanned once, joined, for what any pattern needs; only a document
        that may hold a secret (or has a credential-named key over a string) is redacted string by string.
        """
        strings: list[str] = []
        if self._gather(data, strings) and not self.may_hold_secret("\x00".join(strings)):
            return data
        return self.value(data)

    def may_hold_secret(self, text: str) -> bool:
        """False only when no known secret and nothing any token pattern needs occurs in `text`."""
        if self._values is not None and self._values.search(text):
            return True
        if any(needle.search(text) for needle in _NEEDLES):
            return True
        folded = text.casefold()
        return any(needle.search(folded) for needle in _LOWER_NEEDLES)

    def _gather(self, data: Any, strings: list[str]) -> bool:
        """Append every string of `data` to `strings`; False as soon as a key needs redaction on its own.

        Concrete types are tested first: this walk visits every value the results tree writes.
        """
        if isinstance(data, str):
            strings.append(data)
            return True
        if isinstance(data, dict) or isinstance(data, Mapping):
            plain = self._plain_keys
            for key, item in data.items():
                if key not in plain and not self._plain_key(key, item):
                    return False
            return self._gather_items(data.values(), strings)
        if isinstance(data, (list, tuple)):
            return self._gather_items(data, strings)
        return True

    def _gather_items(self, items: Iterable[Any], strings: list[str]) -> bool:
        """`_gather` over a container's values; scalars are handled here, without a call each."""
        for item in items:
            if isinstance(item, str):
                strings.append(item)
            elif item is None or isinstance(item, (int, float)):
                continue
            elif not self._gather(item, strings):
                return False
        return True

    def _plain_key(self, key: Any, item: Any) -> bool:
        """A key that `value` would leave as it is over this item; remembered when that holds over any item."""
        if not isinstance(key, str) or self.text(key) != key:
            return False
        if self._credential_key(key):
            return not (isinstance(item, str) and item)
        if len(self._plain_keys) < MAX_CACHED:
            self._plain_keys.add(key)
        return True

    def json_bytes(self, data: bytes) -> bytes:
        """A file's bytes with secrets removed: JSON is redacted as data (so it stays valid JSON), else as text."""
        text = data.decode("utf-8", errors="replace")
        try:
            parsed = json.loads(text)
        except ValueError:
            return self.text(text).encode("utf-8")
        redacted = self.value(parsed)
        if redacted == parsed:
            return data
        return (json.dumps(redacted, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
