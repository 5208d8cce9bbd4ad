"""Explain the errors of where a snippet runs, not of its autograd: a package that is not
installed (with gradwalk's own way for plotting ones), a write outside the run's working
folder or worker processes in the sandbox (runner/sandbox.py), and ``cuda`` on a machine
without a GPU."""

from __future__ import annotations

import re

__all__ = ["environment_hint"]

# "Torch not compiled with CUDA enabled", "Found no NVIDIA driver on your system", "No CUDA GPUs are available"
_NO_GPU = re.compile(r"not compiled with CUDA|Found no NVIDIA driver|No CUDA GPUs are available")


def environment_hint(exc: BaseException, text: str, source_lines: list[str] | None = None) -> str | None:
    """The hint for ``exc`` (whose message is ``text``) where its cause is the machine or the
    sandbox, in the snippet whose lines are ``source_lines``; ``None`` for any other error."""
    if _NO_GPU.search(text):
        own = _own_cuda_device(source_lines or [])
        if own is not None:  # the snippet set `device` itself: gradwalk's is gone
            return (
                "This machine has no GPU that PyTorch can use (torch.cuda.is_available() is False), "
                f"and line {own} sets device to 'cuda' itself, over the device gradwalk gives the run "
                f"('cpu' here). Write line {own} as device = 'cuda' if torch.cuda.is_available() else "
                "'cpu' (it then runs on either), or delete it."
            )
        return _NO_GPU_HINT
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        return _missing_package_hint(exc.name.split(".")[0])
    missing = _missing_file(exc, text)
    if missing:
        return _missing_file_hint(missing)
    if _network_error(exc, text) and not _can_open_sockets():
        return _NO_NETWORK_HINT
    if "Read-only file system" in text:
        return _WORKERS_HINT if _raised_in(exc, "multiprocessing") else _READ_ONLY_HINT
    return None


# `device = "cuda"`, `device = torch.device('cuda:0')`: a snippet's own choice of a GPU
_OWN_CUDA = re.compile(r"""^\s*device\s*=\s*(torch\.device\(\s*)?['"]cuda(:\d+)?['"]\s*\)?\s*(#.*)?$""")


def _own_cuda_device(source_lines: list[str]) -> int | None:
    """The line where the snippet sets ``device`` to a GPU unconditionally, if it does."""
    return next((i for i, text in enumerate(source_lines, 1) if _OWN_CUDA.match(text)), None)


# numpy's loadtxt/genfromtxt say "data.csv not found." (a FileNotFoundError without a filename)
_NOT_FOUND = re.compile(r"^(\S+) not found\.$")


def _missing_file(exc: BaseException, text: str) -> str | None:
    """The file a ``FileNotFoundError`` is about (its name), if ``exc`` is one."""
    if not isinstance(exc, FileNotFoundError):
        return None
    if isinstance(exc.filename, str):
        return exc.filename
    found = _NOT_FOUND.match(text)
    return found.group(1) if found else None


def _missing_file_hint(name: str) -> str:
    return (
        f"There is no '{name[:120]}' where the snippet runs. gradwalk's app runs a snippet on its "
        "server, in an empty scratch folder of its own: files from your computer are not there, "
        "and none can be uploaded. Make the data in the snippet instead (X = torch.randn(100, 3); "
        "y = X @ torch.tensor([2.0, -1.0, 0.5]) + 0.1 * torch.randn(100)), or write the file in "
        "the snippet first (torch.save) and read it back."
    )


def _network_error(exc: BaseException, text: str) -> bool:
    """Whether ``exc`` (message ``text``) is a failure to reach the network."""
    import socket
    import urllib.error

    if isinstance(exc, (urllib.error.URLError, socket.gaierror, ConnectionError)):
        return True
    return "Temporary failure in name resolution" in text or "Network is unreachable" in text


def _can_open_sockets() -> bool:
    """Whether this process may open a socket (a sandboxed run may not: runner/seccomp.py)."""
    import socket

    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
    except OSError:
        return False
    return True


_NO_NETWORK_HINT = (
    "A snippet run by gradwalk has no network, so nothing can be downloaded: no dataset "
    "(download=True), pretrained weights, torch.hub model or URL. Use random tensors of the "
    "data's shape instead: for MNIST, images = torch.randn(64, 1, 28, 28) and "
    "labels = torch.randint(0, 10, (64,))."
)


# packages people reach for in a snippet that gradwalk does the work of
_PLOTTING = frozenset({"matplotlib", "seaborn", "plotly", "tensorboard", "wandb", "tqdm"})


def _missing_package_hint(package: str) -> str:
    """What to do when ``import package`` fails: what is there, and gradwalk's own way."""
    hint = (
        f"'{package}' is not installed where gradwalk runs snippets: PyTorch and NumPy are, with "
        "Python's standard library."
    )
    if package in _PLOTTING:
        hint += (
            " gradwalk charts the run itself: the loss, gradient norms and memory of every "
            "optimizer step show in the Charts tab, and any other number with "
            "gradwalk.log('name', value)."
        )
    elif package.startswith("torch"):
        hint += " Make the data with torch itself (torch.randn, torch.utils.data.TensorDataset)."
    return hint


def _raised_in(exc: BaseException, package: str) -> bool:
    """Whether ``exc`` passed through the standard library's ``package`` on its way up."""
    tb = exc.__traceback__
    while tb is not None:
        if f"/{package}/" in tb.tb_frame.f_code.co_filename:
            return True
        tb = tb.tb_next
    return False


# the sandbox a run by the app gets (runner/sandbox.py): a read-only tree but for the
# working folder, and no shared memory
_READ_ONLY_HINT = (
    "A snippet run by gradwalk may write only in its working folder (a small scratch folder that "
    "vanishes with the run); the rest of the file system is read-only. Write with a relative path: "
    "open('out.txt', 'w')."
)
_WORKERS_HINT = (
    "Worker processes need shared memory (/dev/shm), and a snippet run by gradwalk has none: its "
    "sandbox is read-only but for the working folder. Load batches in the snippet's own process "
    "with DataLoader(..., num_workers=0) (the default), and call the function directly instead of "
    "through a multiprocessing pool."
)


_NO_GPU_HINT = (
    "This machine has no GPU that PyTorch can use (torch.cuda.is_available() is False), so "
    "nothing can be put on 'cuda'. Use the variable device, which gradwalk sets to the device "
    "the run was asked for ('cpu' here): x.to(device), model.to(device), torch.randn(3, "
    "device=device). Outside gradwalk: device = 'cuda' if torch.cuda.is_available() else 'cpu'."
)
