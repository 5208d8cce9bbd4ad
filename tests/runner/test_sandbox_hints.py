"""What a snippet cannot do in the sandbox is said in plain words, at its line."""

from __future__ import annotations

import pytest

from .conftest import PoolDriver, finished

NEEDS_WORKERS = {
    "DataLoader with worker processes": (
        "import torch\n"
        "from torch.utils.data import DataLoader, TensorDataset\n"
        "ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))\n"
        "dl = DataLoader(ds, batch_size=16, num_workers=2)\n"
        "for xb, yb in dl:\n"
        "    print(xb.shape)\n",
        5,
    ),
    "a multiprocessing pool": (
        "import multiprocessing as mp\n"
        "def square(x):\n"
        "    return x * x\n"
        "if __name__ == '__main__':\n"
        "    with mp.Pool(2) as pool:\n"
        "        print(pool.map(square, [1, 2, 3]))\n",
        5,
    ),
}


@pytest.mark.parametrize("name", sorted(NEEDS_WORKERS))
def test_worker_processes_get_a_hint_to_load_in_process(driver: PoolDriver, name: str) -> None:
    source, line = NEEDS_WORKERS[name]
    events, _ = driver.run(source)
    assert finished(events).status == "error"
    (error,) = [e for e in events if e.type == "error"]
    assert error.line == line and "Read-only file system" in error.message
    assert error.hint and "num_workers=0" in error.hint and "shared memory" in error.hint


def test_a_file_written_outside_the_working_folder_gets_a_hint(driver: PoolDriver) -> None:
    events, _ = driver.run("open('/usr/out.txt', 'w').write('x')\n")
    (error,) = [e for e in events if e.type == "error"]
    assert error.hint and "working folder" in error.hint
    # and where the hint says to write, writing works
    events, _ = driver.run("open('out.txt', 'w').write('x')\nprint(open('out.txt').read())\n")
    assert finished(events).status == "ok"


def test_input_says_there_is_no_keyboard(driver: PoolDriver) -> None:
    events, _ = driver.run("name = input('name? ')\nprint(name)\n")
    (error,) = [e for e in events if e.type == "error"]
    assert error.exc_type == "EOFError" and error.line == 1
    assert error.hint and "input()" in error.hint and "in the code" in error.hint


def test_a_thread_runs_in_the_sandbox_and_its_backward_is_walked(driver: PoolDriver) -> None:
    # threads stay allowed by the sandbox's filter, and are recorded (NOTE [Threads])
    events, _ = driver.run(
        "import torch, threading\nx = torch.tensor(2.0, requires_grad=True)\n"
        "t = threading.Thread(target=lambda: (x ** 3).backward())\nt.start()\nt.join()\nprint(x.grad)\n"
    )
    assert finished(events).status == "ok"
    assert [e.line for e in events if e.type == "op" and e.name == "pow"] == [3]
    assert len([e for e in events if e.type == "node_executed"]) == 2
    (added,) = [e for e in events if e.type == "grad_accumulated"]
    assert added.after.flat == [12.0]


@pytest.mark.parametrize(
    "source, name",
    [
        ("import torch\nx = torch.load('model.pt')\n", "model.pt"),
        ("import numpy as np\ndata = np.loadtxt('data.csv', delimiter=',')\n", "data.csv"),
        ("with open('train.txt') as f:\n    print(f.read())\n", "train.txt"),
    ],
)
def test_a_file_from_the_learners_computer_is_said_not_to_be_there(
    driver: PoolDriver, source: str, name: str
) -> None:
    events, _ = driver.run(source)
    (error,) = [e for e in events if e.type == "error"]
    assert error.exc_type == "FileNotFoundError" and error.line in (1, 2), error
    assert error.hint and f"There is no '{name}' where the snippet runs" in error.hint, error.hint
    assert "Make the data in the snippet instead" in error.hint


def test_a_download_is_said_to_have_no_network(driver: PoolDriver) -> None:
    events, _ = driver.run("import urllib.request\nurllib.request.urlopen('https://example.com/mnist.gz')\n")
    (error,) = [e for e in events if e.type == "error"]
    assert error.exc_type == "URLError" and error.line == 2, error
    assert error.hint and "has no network, so nothing can be downloaded" in error.hint, error.hint
    assert "torch.randn(64, 1, 28, 28)" in error.hint
