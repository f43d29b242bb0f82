#!/usr/bin/python3
"""The twin of knownbugs/drivers/python-redis-py-4.3.4-timeout0: the same
driver with redis-py PR #4282's guard applied at load time (that file's
FIXED branch: a non-positive renewal time leaves the key as it is). No
release of redis-py with the fix is installable here (no PyPI; the PR is
open)."""
import os, runpy
os.environ["REDIS_PY_TWIN"] = "fixed"
here = os.path.dirname(os.path.realpath(__file__))
runpy.run_path(os.path.join(here, "..", "python-redis-py-4.3.4-timeout0", "driver.py"), run_name="__main__")
