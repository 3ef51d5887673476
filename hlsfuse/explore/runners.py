"""Where a sweep's tasks run, and how their results come back: as each finishes, in any order.

    local   a process pool of ``jobs`` workers on this machine (one: in this process)
    dask    an existing Dask distributed cluster (``--scheduler tcp://HOST:PORT``); each worker needs only
            hlsfuse, g++ and Verilator, and keeps its own caches (graphs, solver spaces, Verilator models)

A task is ``(function, args)``; the function is called as ``function(*args, payload=...)`` where it runs,
``payload`` being the graphs (digest -> graph dict), sent once per worker: the pool's initializer installs
them, and Dask broadcasts them to every worker before the tasks start. Stopping the iteration (Ctrl-C)
cancels what has not run: the pool's workers are terminated, the cluster's futures cancelled.
"""

from __future__ import annotations

import multiprocessing
import queue
from collections.abc import Callable, Iterator, Mapping, Sequence

from ..errors import HlsfuseError
from .evaluate import install

__all__ = ["Task", "run_local", "run_dask"]

Task = tuple[Callable, tuple]


def run_local(tasks: Sequence[Task], payload: Mapping[str, dict], jobs: int) -> Iterator[tuple[int, object]]:
    """(task index, result) per task as it finishes, on ``jobs`` processes."""
    if jobs <= 1 or len(tasks) <= 1:
        install(payload)
        for k, (function, args) in enumerate(tasks):
            yield k, function(*args)
        return
    done: queue.SimpleQueue = queue.SimpleQueue()
    with multiprocessing.get_context().Pool(min(jobs, len(tasks)), initializer=install,
                                            initargs=(payload, True)) as pool:  # leaving terminates the workers
        for k, (function, args) in enumerate(tasks):
            pool.apply_async(function, args, callback=lambda r, k=k: done.put((k, r, None)),
                             error_callback=lambda e, k=k: done.put((k, None, e)))
        for _ in tasks:
            k, result, error = done.get()
            if error is not None:
                raise error
            yield k, result


def run_dask(tasks: Sequence[Task], payload: Mapping[str, dict], address: str) -> Iterator[tuple[int, object]]:
    """(task index, result) per task as it finishes, on the Dask cluster whose scheduler is at ``address``."""
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise HlsfuseError("--scheduler needs Dask's distributed package: pip install 'hlsfuse[explore]'") from None
    try:
        client = Client(address, timeout="15s")
    except (OSError, TimeoutError, ValueError) as exc:
        raise HlsfuseError(f"--scheduler {address}: cannot connect to a Dask scheduler ({exc})") from None
    with client:
        if not client.scheduler_info().get("workers"):
            client.wait_for_workers(1, timeout=60)
        [graphs] = client.scatter([dict(payload)], broadcast=True)
        futures = [client.submit(function, *args, payload=graphs, pure=False) for function, args in tasks]
        index = {f.key: k for k, f in enumerate(futures)}
        try:
            for future, result in as_completed(futures, with_results=True):
                yield index[future.key], result
        finally:
            client.cancel(futures)
