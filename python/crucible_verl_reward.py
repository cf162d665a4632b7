"""verl loads custom_reward_function.path as a lone file, not as a package
member: this file puts python/ on the path and hands verl the adapter's
functions (docs/trainers/verl.md)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from crucible.verl import compute_score, compute_score_async  # noqa: E402,F401
