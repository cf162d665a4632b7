"""Where a torch task's problem file is: tasks/torch/NAME.py, or a task folder
tasks/torch/NAME/ whose task.json names it ("reference", default problem.py).
Shared by the GPU scripts that run the examples outside crucible."""
import json
import os


def problem_path(src, task):
    path = os.path.join(src, "tasks", "torch", task + ".py")
    if os.path.exists(path):
        return path
    d = os.path.join(src, "tasks", "torch", task)
    with open(os.path.join(d, "task.json")) as f:
        return os.path.join(d, json.load(f).get("reference", "problem.py"))
