"""The `--pass-env` allowance: names only, command line only, and the values a runner may forward."""

from __future__ import annotations

import pytest

from pytest_skilleval.skill.host_env import forwarded_env, looks_like_credential, pass_env_names
from pytest_skilleval.skill.settings import RunSettings


@pytest.mark.parametrize(
    "name",
    [
        "GITHUB_TOKEN",
        "STRIPE_KEY",
        "OPENAI_API_KEY",
        "CLIENT_SECRET",
        "MY_DB_PASSWORD",
        "db_password",
        "AWS_REGION",
        "AZURE_TENANT_ID",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "ANTHROPIC_BASE_URL",
        "MODAL_TOKEN_ID",
        "KUBECONFIG",
    ],
)
def test_credential_looking_names(name: str) -> None:
    assert looks_like_credential(name)


@pytest.mark.parametrize("name", ["APP_URL", "SERVICE_HOST", "LANG", "MY_FLAG", "TOKENIZER_PATH", "KEYBOARD"])
def test_ordinary_names(name: str) -> None:
    assert not looks_like_credential(name)


def test_forwarded_env_gives_only_allowed_names_that_are_set() -> None:
    host = {"APP_URL": "http://x", "SECRET_TOKEN": "s3cr3t", "HOME": "/root"}
    assert forwarded_env(["APP_URL", "MISSING"], host) == {"APP_URL": "http://x"}
    assert forwarded_env([], host) == {}


def test_pass_env_names_are_checked_and_deduplicated() -> None:
    assert pass_env_names(["A", " B ", "A"]) == ["A", "B"]
    for bad in ["A=1", "", "1ABC", "A B"]:
        with pytest.raises(ValueError, match="--pass-env expects a variable name"):
            pass_env_names([bad])


def test_run_settings_default_to_no_allowance() -> None:
    assert RunSettings().pass_env == []
    assert RunSettings(pass_env=["X", "X"]).pass_env == ["X"]


@pytest.mark.parametrize("name", ["GITHUB_PAT", "NPM_AUTH", "DOCKER_AUTH_CONFIG", "PGPASSWORD", "HF_TOKEN", "MY_KEY"])
def test_a_name_called_a_credential_has_its_value_redacted_from_what_is_written(name: str) -> None:
    """One rule: what `--pass-env` messages call a credential is what the redaction pass removes from artifacts."""
    from verifier.redact import Redactor

    secret = "Zq81mXo2Lk5bN7rTy3Vw"
    assert looks_like_credential(name)
    assert Redactor.from_environment({name: secret}).text(f"echo {secret}") == "echo [REDACTED]"


@pytest.mark.parametrize("name", ["AUTHOR", "PATH", "MY_PATTERN", "MAX_TOKENS"])
def test_ordinary_names_are_not_credentials(name: str) -> None:
    from verifier.redact import Redactor

    assert not looks_like_credential(name)
    assert (
        Redactor.from_environment({name: "Zq81mXo2Lk5bN7rTy3Vw"}).text("Zq81mXo2Lk5bN7rTy3Vw") == "Zq81mXo2Lk5bN7rTy3Vw"
    )
