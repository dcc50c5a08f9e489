"""The `--pass-env` allowance: names only, command line only, and the values a runner may forward."""

from __future__ import annotations

import pytest

from pytest_skilleval.skill.host_env import forwarded_env, looks_like_credential, pass_env_names
from pytest_skilleval.skill.settings import RunSettings


@pytest.mark.parametrize(
    "name",
    ["GITHUB_TOKEN", "STRIPE_KEY", "OPENAI_API_KEY", "CLIENT_SECRET", "MY_DB_PASSWORD", "db_password", "AWS_REGION",
     "AZURE_TENANT_ID", "GOOGLE_APPLICATION_CREDENTIALS", "ANTHROPIC_BASE_URL", "MODAL_TOKEN_ID", "KUBECONFIG"],
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
