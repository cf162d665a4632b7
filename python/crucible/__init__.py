"""Crucible's Python client and trainer adapters (standard library only).

Talks to `crucible gateway` over HTTP/JSON (docs/gateway.md). Adapters:
crucible.verl, crucible.trl, crucible.areal, crucible.verifiers (docs/trainers/).
"""
from .client import AsyncClient, Client, CrucibleError, Job, new_batch_id
from .records import (BatchResult, BenchResult, CaseResult, CompileResult, Group, ProfileResult,
                      RewardComponents, RewardRecord, SubmitAck, VerifyResult)

__all__ = ["AsyncClient", "Client", "CrucibleError", "Job", "new_batch_id", "BatchResult",
           "BenchResult", "CaseResult", "CompileResult", "Group", "ProfileResult",
           "RewardComponents", "RewardRecord", "SubmitAck", "VerifyResult"]
