"""A trial's cost in USD: what the agent reported, else its token counts priced per model.

Prices come from a per-model override (`--model-price`, ini `skilleval_model_price`, `harbor.model_prices` in
evals/config.yml: for a gateway, or a model litellm does not know), else from litellm's price map, always the copy
installed with litellm (`LITELLM_LOCAL_MODEL_COST_MAP` is forced on before litellm loads: a run never fetches it).
A model neither knows leaves the cost missing, never zero.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from pytest_skilleval.results.records import TokenUsage
from pytest_skilleval.skill.settings import ModelPrice

MILLION = 1_000_000


def _price_map_cost(model: str, prompt: int, completion: int) -> float | None:
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    import litellm

    for name in dict.fromkeys((model, model.split("/", 1)[-1])):
        try:
            cost_in, cost_out = litellm.cost_per_token(model=name, prompt_tokens=prompt, completion_tokens=completion)
        except Exception:  # noqa: BLE001 - litellm raises several kinds for a model it does not know
            continue
        return float(cost_in) + float(cost_out)
    return None


def priced(usage: TokenUsage | None, model: str | None, prices: Mapping[str, ModelPrice]) -> TokenUsage | None:
    """`usage` with `cost_usd` and `cost_source` filled in when they can be (the agent's own figure wins)."""
    if usage is None:
        return None
    if usage.cost_usd is not None:
        return usage.model_copy(update={"cost_source": "agent"})
    if model is None or usage.prompt is None or usage.completion is None:
        return usage
    override = prices.get(model) or prices.get(model.split("/", 1)[-1])
    if override is not None:
        fixed = (usage.prompt * override.input_per_mtok + usage.completion * override.output_per_mtok) / MILLION
        return usage.model_copy(update={"cost_usd": fixed, "cost_source": "override"})
    mapped = _price_map_cost(model, usage.prompt, usage.completion)
    return usage if mapped is None else usage.model_copy(update={"cost_usd": mapped, "cost_source": "price_map"})
