"""One redaction pass over everything we write or print: no secret reaches a file, JUnit or the terminal.

What counts as a secret (the rules are `verifier.secret_patterns`, the one set): the values of credential-named
variables in the host environment (`*_KEY`, `*_TOKEN`, `*SECRET*`, `*PASSWORD*`, `DB_PASS`, `SERVICE_PWD`,
`STRIPE_SK`, ...), the values of credential-named or token-shaped `--ek`/agent kwargs, and anything shaped like a
token (`sk-...`, `ghp_...`, `AKIA...`, `xoxb-...`, Slack webhooks, keys in URLs, `Bearer ...`, private key blocks).
An agent or grader can print those every way it likes (an env dump, stderr, reward details, a traceback), so the
pass runs where our output leaves the process: the results tree writer, the JUnit properties and failure text,
the terminal summary. Values too short or too plain to be secrets (`true`, `default`) are left alone, since
replacing them would corrupt ordinary fields.

Pure standard library.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from verifier.secret_patterns import REDACTED, has_token_shape, is_credential_name, may_hold_token, redact_tokens

MIN_SECRET_LENGTH = 8
# Plain lowercase words this long are passphrases rather than config values.
MIN_PLAIN_SECRET_LENGTH = 16
# Short strings (keys, statuses, names) repeat across thousands of trials: their redaction is remembered, up to a
# bound, so writing 20,000 trials does not run every pattern over `"passed"` 20,000 times.
CACHED_TEXT_LENGTH = 64
MAX_CACHED = 100_000

__all__ = ["REDACTED", "Redactor", "environment_secrets", "is_secret_kwarg", "kwarg_secrets", "secret_forms"]


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
    return [value for name, value in environ.items() if is_credential_name(name) and _secret_shaped(value)]


def is_secret_kwarg(key: str, value: Any) -> bool:
    """A kwarg value is a secret when its name is a credential name or the value holds a token shape; a path or
    any other plain value under an ordinary name (`replay_dir`) is not."""
    text = str(value)
    return len(text.strip()) >= 4 and (is_credential_name(key) or has_token_shape(text))


def kwarg_secrets(kwargs: Mapping[str, Any]) -> list[str]:
    """Values of kwargs (`--ek`, agent kwargs) whose name or value looks like a credential."""
    return [str(value) for key, value in kwargs.items() if is_secret_kwarg(str(key), value)]


def secret_forms(secrets: Iterable[str]) -> set[str]:
    """Each secret as written and as it appears inside a JSON string (escaped, with and without ASCII escapes)."""
    forms: set[str] = set()
    for secret in secrets:
        secret = secret.strip()
        if secret:
            forms.update((secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]))
    return forms


class Redactor:
    """Replaces known secret values and token-shaped strings with `[REDACTED]` in text and in JSON-like data."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        ordered = sorted(secret_forms(secrets), key=len, reverse=True)
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
            known = is_credential_name(key) or has_token_shape(key)
            if len(self._credential_keys) < MAX_CACHED:
                self._credential_keys[key] = known
        return known

    def _redact_text(self, text: str) -> str:
        if self._values is not None:
            text = self._values.sub(REDACTED, text)
        return redact_tokens(text)

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
        return may_hold_token(text)

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
