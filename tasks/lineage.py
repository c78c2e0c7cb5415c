"""A run's results as Prefect assets: the task that publishes them materializes one asset per
result, keyed by the result's URI, with the input's URI as its upstream asset, so Prefect's
events (and the UI's asset views) show the lineage input -> results of every run.

Keys are URIs: a local path becomes ``file:///absolute/path``, an object-store URI stays as it
is. Prefect refuses keys holding spaces, ``%``, ``#`` and a few other characters; a result
whose key would hold one is published as usual but not materialized (lineage is a record of
the run, never a reason for it to fail)."""
import os

from prefect import Task
from prefect.assets import Asset
from prefect.tasks import MaterializingTask


def asset_key(location: str | os.PathLike) -> str | None:
    """The asset key of a path or URI, or None where Prefect cannot hold it as a key."""
    text = os.fspath(location)
    key = text if "://" in text else "file://" + os.path.abspath(text)
    try:
        return Asset(key=key).key
    except ValueError:
        return None


def materializing(task: Task, options: dict, results: list, input: str) -> Task:
    """``task`` (made with the task options ``options``) as a task that materializes ``results``
    from ``input``; ``task`` itself where no result has a key."""
    keys = [key for key in map(asset_key, results) if key is not None]
    if not keys:
        return task
    upstream = asset_key(input)
    return MaterializingTask(fn=task.fn, name=task.name, assets=keys,
                             asset_deps=[upstream] if upstream else None, **options)
