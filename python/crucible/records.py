"""Typed views of what the gateway returns: every field of proto/crucible.proto's
RewardRecord (and its nested messages), parsed from the gateway's JSON, so a
trainer's protobuf version never matters.

A field the JSON lacks keeps its proto3 default (0, "", False, empty list).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

# Statuses after which the record carries no reward: an infrastructure
# outcome, never a verdict on the candidate (docs/gateway.md).
INFRA_STATUSES = frozenset({"WORKER_LOST", "INFRA_ERROR", "CANCELLED"})


def _build(cls, obj: Optional[Dict[str, Any]]):
    """An instance of dataclass cls from a JSON object; unknown keys are kept in `extra`."""
    if obj is None:
        return None
    kw: Dict[str, Any] = {}
    names = {f.name: f for f in dataclasses.fields(cls)}
    for k, v in obj.items():
        f = names.get(k)
        if f is None or k == "extra":
            kw.setdefault("extra", {})[k] = v
            continue
        sub = _NESTED.get((cls.__name__, k))
        if sub is not None:
            v = [_build(sub, x) for x in v] if isinstance(v, list) else _build(sub, v)
        elif v is None and f.type in ("float", "Optional[float]"):
            v = float("nan")  # a non-finite double travels as null
        kw[k] = v
    return cls(**kw)


@dataclass
class CompileResult:
    ok: bool = False
    log: str = ""
    seconds: float = 0.0
    cache_hit: bool = False
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass
class CaseResult:
    index: int = 0
    passed: bool = False
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    mismatches: int = 0
    first_bad_index: int = 0
    inputs_unchanged: bool = False
    all_written: bool = False
    second_run_passed: bool = False
    message: str = ""
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass
class VerifyResult:
    ok: bool = False
    cases: List[CaseResult] = field(default_factory=list)
    seconds: float = 0.0
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass
class BenchResult:
    case_index: int = 0
    samples: int = 0
    median_us: float = 0.0
    mean_us: float = 0.0
    min_us: float = 0.0
    iqr_us: float = 0.0
    rse: float = 0.0
    ref_samples: int = 0
    ref_median_us: float = 0.0
    ref_rse: float = 0.0
    speedup: float = 0.0
    speedup_lo: float = 0.0
    speedup_hi: float = 0.0
    wall_median_us: float = 0.0
    verified_samples: int = 0
    mean_sm_clock_mhz: float = 0.0
    throttled_dropped: int = 0
    floor_us: float = 0.0
    raw_median_us: float = 0.0
    stall_period_us: float = 0.0
    stall_us: float = 0.0
    level_offset_us: float = 0.0
    ref_min_us: float = 0.0
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass
class ProfileResult:
    cases: List[BenchResult] = field(default_factory=list)
    speedup_geomean: float = 0.0
    cache_flushed: bool = False
    clock_policy: str = ""
    seconds: float = 0.0
    ref_policy: str = ""
    baseline: str = ""
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass
class RewardComponents:
    formula: str = ""
    correct: float = 0.0
    speed: float = 0.0
    penalty: float = 0.0
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass
class RewardRecord:
    batch_id: str = ""
    job_id: str = ""
    task: str = ""
    group_id: str = ""
    sample_index: int = 0
    turn: int = 0
    attempt: int = 0
    seq: int = 0
    status: str = "STATUS_UNSPECIFIED"
    message: str = ""
    compile: Optional[CompileResult] = None
    verify: Optional[VerifyResult] = None
    profile: Optional[ProfileResult] = None
    hack_flags: List[str] = field(default_factory=list)
    has_reward: bool = False
    reward: float = 0.0
    components: Optional[RewardComponents] = None
    worker_id: str = ""
    host: str = ""
    device: str = ""
    backend: str = ""
    t_submitted: int = 0
    t_assigned: int = 0
    t_compiled: int = 0
    t_verified: int = 0
    t_finished: int = 0
    advantage: float = 0.0
    sandboxed_net: bool = False
    extra: Dict[str, Any] = field(default_factory=dict)

    @property
    def reward_or_none(self) -> Optional[float]:
        """The reward, or None when there is none (an infrastructure failure)."""
        return float(self.reward) if self.has_reward else None

    @classmethod
    def from_json(cls, obj: Dict[str, Any]) -> "RewardRecord":
        rec = _build(cls, obj)
        if isinstance(rec.status, int):
            rec.status = _STATUS_NAMES.get(rec.status, str(rec.status))
        elif rec.status.startswith("STATUS_"):
            rec.status = rec.status[len("STATUS_"):]
        return rec


@dataclass
class Group:
    """A finished GRPO group: its members' rewards (None = no reward) and the
    coordinator's group-relative advantages, in the coordinator's member order."""
    group_id: str
    job_ids: List[str]
    rewards: List[Optional[float]]
    advantages: List[float]
    seq: int = 0

    @classmethod
    def from_json(cls, obj: Dict[str, Any]) -> "Group":
        return cls(group_id=obj["group_id"], job_ids=list(obj["job_ids"]),
                   rewards=list(obj["rewards"]), advantages=[float(a) for a in obj["advantages"]],
                   seq=int(obj.get("seq", 0)))

    def advantage_of(self, job_id: str) -> float:
        return self.advantages[self.job_ids.index(job_id)]


@dataclass
class SubmitAck:
    batch_id: str
    accepted: int = 0
    duplicate: int = 0
    rejected: int = 0
    errors: List[str] = field(default_factory=list)
    state: str = ""


@dataclass
class BatchResult:
    """A batch's records in the order the jobs were given (None where a record
    did not come before the deadline), their rewards (None = no reward) and
    the finished groups by id."""
    batch_id: str
    job_ids: List[str]
    records: List[Optional[RewardRecord]]
    groups: Dict[str, Group]
    complete: bool
    state: str = ""

    @property
    def rewards(self) -> List[Optional[float]]:
        return [r.reward_or_none if r is not None else None for r in self.records]

    @property
    def advantages(self) -> List[Optional[float]]:
        """Each job's advantage within its group; None outside a finished group."""
        out: List[Optional[float]] = []
        for jid, r in zip(self.job_ids, self.records):
            g = self.groups.get(r.group_id) if r is not None and r.group_id else None
            out.append(g.advantage_of(jid) if g is not None and jid in g.job_ids else None)
        return out


_STATUS_NAMES = {0: "STATUS_UNSPECIFIED", 1: "OK", 2: "COMPILE_ERROR", 3: "COMPILE_TIMEOUT",
                 4: "RUNTIME_ERROR", 5: "CUDA_FAULT", 6: "OOM", 7: "TIMEOUT", 8: "INCORRECT",
                 9: "HACK_DETECTED", 10: "WORKER_LOST", 11: "INFRA_ERROR", 12: "CANCELLED",
                 13: "INVALID_TASK"}

_NESTED = {
    ("RewardRecord", "compile"): CompileResult,
    ("RewardRecord", "verify"): VerifyResult,
    ("RewardRecord", "profile"): ProfileResult,
    ("RewardRecord", "components"): RewardComponents,
    ("VerifyResult", "cases"): CaseResult,
    ("ProfileResult", "cases"): BenchResult,
}
