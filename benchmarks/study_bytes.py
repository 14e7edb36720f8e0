"""What a parameter study ships to its workers, and what a run copies there.

The example sweep (examples/three_body_sweep.toml, 64 runs): the bytes of the model
object scattered once to each worker, the bytes of one run's task (its values and the
outputs to keep) as Dask pickles them, and the bytes a worker copies per run of the
built model (a deep copy made per run, or per thread and reused), measured as the
pickled size of what is copied. Run it at two commits to compare.

    python benchmarks/study_bytes.py

Not a test: pytest never collects benchmarks/.
"""

from __future__ import annotations

import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cloudpickle  # noqa: E402

from elements.study import load_study  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main() -> None:
    study = load_study(os.path.join(ROOT, "examples", "three_body_sweep.toml"))
    pm = study.model
    runs = study.runs()
    pm.prepare(study.parameters.names)
    pm.simulate(runs[0].values)                       # (the worker's template is built)
    scattered = len(cloudpickle.dumps(pm))
    task = [len(cloudpickle.dumps((r, study.outputs))) for r in runs]
    counted = {"n": 0, "bytes": 0}
    real = copy.deepcopy

    def counting(obj, memo=None, _nil=[]):       # noqa: B006 - the deepcopy signature
        if type(obj).__name__ == "MechanismModel":  # (a copy of the built model)
            counted["n"] += 1
            counted["bytes"] = len(cloudpickle.dumps(obj))
        return real(obj, memo) if memo is not None else real(obj)

    copy.deepcopy = counting
    try:
        for r in runs[:8]:
            pm.simulate(r.values)
    finally:
        copy.deepcopy = real
    copies = counted["n"]
    print(f"model object scattered once per worker: {scattered} bytes")
    print(f"one run's task (values + outputs): {min(task)}-{max(task)} bytes")
    print(f"deep copies of the built model per run (8 runs, a new copy each): "
          f"{copies / 8:.2f}" + (f", {counted['bytes']} bytes each (pickled)"
                                 if copies else ""))


if __name__ == "__main__":
    main()
