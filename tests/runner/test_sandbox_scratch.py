"""Temporary files in the strict sandbox go to its scratch, wherever the scratch is (/tmp, or
/scratch when the checkout, and so the venv, lives under /tmp: CI's clone). Python's tempfile
had read TMPDIR before the sandbox and kept /tmp, read-only there: a snippet's
tempfile.mkdtemp() failed, and so did torch.cond, whose TorchDynamo compile makes a cache
folder under the temporary directory (fidelity hunt 53)."""

from __future__ import annotations

from engine.events import Limits
from tests.engine.test_fidelity_hunt53 import COND

from .conftest import PoolDriver
from .test_hostile import finished, outputs


def test_temporary_files_go_to_the_scratch(driver: PoolDriver) -> None:
    events, _ = driver.run(
        "import os, tempfile\n"
        "folder = tempfile.mkdtemp()\n"
        "open(os.path.join(folder, 'f.txt'), 'w').write('x')\n"
        "print(tempfile.gettempdir() == os.environ['TMPDIR'] == os.getcwd(), os.path.dirname(folder) == os.getcwd())\n"
    )
    assert outputs(events) == "True True\n", finished(events).message


def test_a_torch_cond_runs_in_the_sandbox(driver: PoolDriver) -> None:
    events, handle = driver.run(COND, limits=Limits(timeout_s=60.0))
    assert (finished(events).status, handle.status) == ("ok", "ok"), finished(events).message
    assert outputs(events) == "tensor([0.8776, 0.0707])\n"
