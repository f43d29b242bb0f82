#!/usr/bin/python3
"""The twin of knownbugs/drivers/python-portalocker-2.2.1: the same driver
with the upstream fix for portalocker's subscribe-versus-count race applied
at load time (that file's fixed_acquire: read this lock's own SUBSCRIBE
confirmation before counting subscribers on the other connection). Later
portalocker releases are not installable here (no PyPI)."""
import os, runpy
os.environ["PORTALOCKER_TWIN"] = "fixed"
here = os.path.dirname(os.path.realpath(__file__))
runpy.run_path(os.path.join(here, "..", "python-portalocker-2.2.1", "driver.py"), run_name="__main__")
