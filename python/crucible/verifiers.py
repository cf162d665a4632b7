"""verifiers: a rubric function, `vf.Rubric(funcs=[crucible_kernel_reward])`
(docs/trainers/verifiers.md).

verifiers calls reward functions per rollout with the arguments they name
(prompt, completion, answer, state, task, info, ...), async ones awaited
concurrently: those calls are coalesced into one Crucible batch per burst.
The task: info["task"], else answer, else verifiers' own `task` column.
"""
from __future__ import annotations

from typing import Any, Optional

from ._adapt import Coalescer, group_of, task_name

_coalescer: Optional[Coalescer] = None


async def crucible_kernel_reward(completion, answer=None, prompt=None, info=None, task=None,
                                 **kwargs) -> Optional[float]:
    global _coalescer
    if _coalescer is None:
        _coalescer = Coalescer()
    name = task_name((info or {}).get("task") if isinstance(info, dict) else None, answer, task)
    return await _coalescer.score(name, completion, group_of(name, prompt) if name else None)
