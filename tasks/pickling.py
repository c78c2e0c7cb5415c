"""Prefect tasks whose functions pickle by reference (module and name) instead of by value.

A function decorated with @task or @flow gives its name to the Task or Flow, so `module.name`
is not the function, and pickle and cloudpickle both fall back to pickling it by value: its
code and the globals it uses, which for a flow are all its tasks, each by value in turn. Dask
pickles every task run's task and flow run context, so each submit pickled twelve functions by
value (~14 ms on 2 cores), and the worker rebuilt them all for every task run. Named
`name.fn`, the path through the Task to its function, each pickles as a reference that
any process importing the module resolves. A function defined in a script run as __main__
still pickles by value (Dask sends those with cloudpickle).

Flows keep their names: Prefect builds a deployment's entrypoint (flow.serve, to_deployment)
from the flow function's __qualname__, and a deployment loads flows/mst.py by path as module
`mst`, which a Dask worker started elsewhere cannot import. A flow pickled by value costs
little once its tasks go by reference.
"""
from __future__ import annotations

from prefect import Task


def pickle_by_reference(namespace: dict) -> None:
    """Rename the function of each Task defined at the top of this module namespace
    (a module's globals()) to the path that reaches it."""
    module = namespace["__name__"]
    for name, obj in list(namespace.items()):
        fn = getattr(obj, "fn", None)
        if isinstance(obj, Task) and getattr(fn, "__module__", None) == module and fn.__qualname__ == name:
            fn.__qualname__ = f"{name}.fn"
