"""verl: a batch `compute_score` for the batch reward manager, and an async
per-sample `compute_score` for the reward loop (docs/trainers/verl.md).

The task of a sample: extra_info["task"], else ground_truth, else data_source.
Its GRPO group: extra_info["index"] (verl's examples give each prompt one),
else the task and ground truth.
"""
from __future__ import annotations

from typing import Any, List, Optional

from ._adapt import Coalescer, client_from_env, group_of, score_step, task_name


def _task_and_group(data_source: Any, ground_truth: Any, extra_info: Any):
    ei = extra_info if isinstance(extra_info, dict) else {}
    task = task_name(ei.get("task"), ground_truth, data_source)
    key = ei.get("index", ei.get("prompt", ground_truth))
    return task, (group_of(task, key) if task else None)


def compute_score(data_sources, solution_strs, ground_truths, extra_infos, **kwargs) -> List[Optional[float]]:
    """reward_model.reward_manager=batch: the whole step in one Crucible batch."""
    n = len(solution_strs)
    extra_infos = list(extra_infos) if extra_infos is not None else [None] * n
    tg = [_task_and_group(data_sources[i], ground_truths[i], extra_infos[i]) for i in range(n)]
    return score_step(client_from_env(), [t for t, _ in tg], list(solution_strs),
                      [g for _, g in tg], timeout=kwargs.get("timeout_s"))


_coalescer: Optional[Coalescer] = None


async def compute_score_async(data_source, solution_str, ground_truth, extra_info=None,
                              **kwargs) -> Optional[float]:
    """The reward loop's per-sample async form; concurrent calls share one batch."""
    global _coalescer
    if _coalescer is None:
        _coalescer = Coalescer()
    task, group = _task_and_group(data_source, ground_truth, extra_info)
    return await _coalescer.score(task, solution_str, group)
