"""TRL: `reward_func(prompts, completions, completion_ids, **kwargs)` for
GRPOTrainer(reward_funcs=[...]) (docs/trainers/trl.md).

The task of sample i: the dataset column "task" (kwargs["task"][i]), else
"label". Its GRPO group: its prompt (GRPOTrainer repeats each prompt
num_generations times). Conversational completions (lists of messages) are
read as their last assistant message. None = no reward (TRL skips it).
"""
from __future__ import annotations

from typing import Any, List, Optional

from ._adapt import client_from_env, group_of, score_step, task_name


def _tasks(n: int, kwargs: Any) -> List[Optional[str]]:
    col = kwargs.get("task") or kwargs.get("label") or [None] * n
    return [task_name(col[i]) for i in range(n)]


def crucible_kernel_reward(prompts, completions, completion_ids=None, **kwargs) -> List[Optional[float]]:
    n = len(completions)
    tasks = _tasks(n, kwargs)
    groups = [group_of(t, prompts[i]) if t else None for i, t in enumerate(tasks)]
    return score_step(client_from_env(), tasks, list(completions), groups)


async def crucible_kernel_reward_async(prompts, completions, completion_ids=None,
                                       **kwargs) -> List[Optional[float]]:
    """TRL's async reward function form: same batch, awaited."""
    import asyncio
    return await asyncio.to_thread(crucible_kernel_reward, prompts, completions, completion_ids,
                                   **kwargs)
