"""AReaL: `reward_fn(prompt, completions, prompt_ids, completion_ids, **kwargs)`
for its RLVR workflow (docs/trainers/areal.md).

AReaL calls it once per sample, through AsyncRewardWrapper's process pool
(so it is a module-level, picklable function) with a timeout that turns into
reward 0: give the wrapper a timeout_seconds above a kernel's evaluation
time. Concurrent calls are judged in parallel by the cluster. The task:
kwargs["task"], else kwargs["label"], else kwargs["answer"].
"""
from __future__ import annotations

from typing import Any, Optional

from ._adapt import Coalescer, client_from_env, group_of, score_step, task_name


def crucible_reward_fn(prompt, completions, prompt_ids=None, completion_ids=None,
                       **kwargs) -> Optional[float]:
    task = task_name(kwargs.get("task"), kwargs.get("label"), kwargs.get("answer"))
    return score_step(client_from_env(), [task], [completions],
                      [group_of(task, prompt) if task else None])[0]


_coalescer: Optional[Coalescer] = None


async def crucible_reward_fn_async(prompt, completions, prompt_ids=None, completion_ids=None,
                                   **kwargs) -> Optional[float]:
    """For a custom async workflow: concurrent samples go in one batch."""
    global _coalescer
    if _coalescer is None:
        _coalescer = Coalescer()
    task = task_name(kwargs.get("task"), kwargs.get("label"), kwargs.get("answer"))
    return await _coalescer.score(task, completions, group_of(task, prompt) if task else None)
