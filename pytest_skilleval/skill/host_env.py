"""Host environment variables a run may hand to a task: only the names the operator passed with `--pass-env`.

A native task's `[environment.env] A = "${MY_DB_PASSWORD}"` would otherwise copy any host variable into the
sandbox. The allowance is empty by default and comes from the command line only (never from a skill's files), so a
skill cannot widen it. Collection and `skilleval validate` refuse every other reference; the runner forwards values
through `forwarded_env`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pytest_skilleval.skill.config_file import env_control_category
from pytest_skilleval.skill.setting_specs import VARIABLE_NAME_RE
from pytest_skilleval.skill.setting_specs import pass_env_names as pass_env_names
from verifier.secret_patterns import is_credential_name

# Model providers and clouds: their variables configure accounts even when the name does not say "key".
_PROVIDER_CLOUD_PREFIXES = (
    "ANTHROPIC_",
    "OPENAI_",
    "AZURE_",
    "AWS_",
    "GOOGLE_",
    "GCP_",
    "GCLOUD_",
    "CLOUDSDK_",
    "GEMINI_",
    "MISTRAL_",
    "COHERE_",
    "GROQ_",
    "DEEPSEEK_",
    "OPENROUTER_",
    "TOGETHER_",
    "NVIDIA_",
    "XAI_",
    "HUGGINGFACE_",
    "DAYTONA_",
    "E2B_",
    "MODAL_",
    "RUNLOOP_",
    "DIGITALOCEAN_",
    "KUBECONFIG",
)


def looks_like_credential(name: str) -> bool:
    """Whether a variable name reads like a secret (the rule whose values the redaction pass removes from everything
    written: `*_TOKEN`, `*_KEY`, `*_SECRET`, `*PASSWORD*`, ...), or configures a provider or cloud account."""
    upper = name.upper()
    return (
        is_credential_name(name)
        or upper.startswith(_PROVIDER_CLOUD_PREFIXES)
        or env_control_category(upper) == "provider-credential"
    )


def forwarded_env(allowance: Iterable[str], environ: Mapping[str, str]) -> dict[str, str]:
    """The host values a run may forward: each allowed name that is set in `environ`, nothing else."""
    return {name: environ[name] for name in allowance if name in environ}


def is_passable_name(name: str) -> bool:
    """Whether `--pass-env` accepts the name (`${1PLAIN}` or `${.DOTNAME}` can never be passed)."""
    return bool(VARIABLE_NAME_RE.fullmatch(name))


def unpassable_reference_message(where: str, ref: str) -> str:
    """Why a `${...}` reference whose name --pass-env cannot pass is refused."""
    return (
        f"{where} references the host variable {ref!r}, which is not a variable name --pass-env accepts; only "
        "host variables the operator passes explicitly are read: write the value itself"
    )


def unpassed_reference_message(where: str, ref: str) -> str:
    """Why a reference to a host variable that was not passed is refused, and how to pass it."""
    if not is_passable_name(ref):
        return unpassable_reference_message(where, ref)
    credential = ", which looks like a credential" if looks_like_credential(ref) else ""
    return (
        f"{where} references the host variable {ref}{credential}; a native task reads only host variables the "
        f"operator passes explicitly (pytest --pass-env {ref}, or skilleval validate --pass-env {ref})"
    )
