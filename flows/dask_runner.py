"""A Dask task runner whose task runs reuse their worker thread's Prefect settings and API client.

prefect_dask sends every task run the flow run's serialized context. As it stands, the flow
process serializes Prefect's settings for every task run it submits (~30 ms, secrets rendered),
and the worker rebuilds them for every task run: the Settings from their serialized form
(pydantic-settings reads the environment, .env, prefect.toml, pyproject.toml and the profiles
file again) and two API clients (each loads the CA bundle into a new SSL context). On a running
one-worker, one-thread LocalCluster on 2 cores that was ~0.1-0.2 s between a task run's start on
the worker and its function's first line, against ~0.015 s for Dask's own hop. Here the flow
process serializes its settings once, and each worker thread builds settings and
client once per distinct serialized settings. Everything else (flow and task run contexts,
states, events, logs, artifacts, retries) is Prefect's task engine, per task run.

It uses Prefect's context variables, its task engine's entry points and prefect_dask's submit
as they are in the versions pyproject.toml pins (prefect 3.9, prefect-dask 0.3);
tests/test_dask_runner.py and tests/test_dask.py check it against them.

A cluster the runner starts itself (not one given by address or as an object, nor one found
through the process's Dask client) is closed fast: its workers first send the logs and events
Prefect still holds, then leave without the interpreter's teardown (``__exit__``).

Imported only when a Dask runner is asked for (flows/runners.py): it imports prefect_dask.
"""
from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
import threading
import uuid
from collections import OrderedDict
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any

import distributed
from prefect.context import SettingsContext, SyncClientContext, serialize_context
from prefect.task_engine import run_task_async, run_task_sync
from prefect.utilities.engine import collect_task_run_inputs_sync
from prefect_dask import DaskTaskRunner
from prefect_dask.task_runners import PrefectDaskFuture
from pydantic import BaseModel, PrivateAttr

from tasks import artifacts, stopping
from tasks.cluster import cluster_workers

# Settings a worker thread keeps (one entry per distinct serialized settings: flows run with
# temporary settings, or against another server, get their own), with an API client for each.
CACHED_SETTINGS = 4

_thread = threading.local()


def _thread_contexts(serialized: dict, key: str) -> tuple[SettingsContext, SyncClientContext]:
    """This thread's settings and API client for these serialized settings (``key`` names their
    content), built on first use. The client is opened here and stays open for later task runs
    (the task engine enters and leaves it per run, which only counts); one evicted from the
    cache is closed."""
    cache: OrderedDict = getattr(_thread, "contexts", None)
    if cache is None:
        cache = _thread.contexts = OrderedDict()
    if key in cache:
        cache.move_to_end(key)
        return cache[key]
    settings = SettingsContext(**serialized)
    token = SettingsContext.__var__.set(settings)
    try:
        client = SyncClientContext()  # reads the API URL and key from these settings
        client.client.__enter__()
        if settings.settings.client.server_version_check_enabled:
            client.client.raise_for_api_version_mismatch_once()
    finally:
        SettingsContext.__var__.reset(token)
    cache[key] = (settings, client)
    while len(cache) > CACHED_SETTINGS:
        _, (_, evicted) = cache.popitem(last=False)
        evicted.client.__exit__(None, None, None)
    return settings, client


def run_task_on_worker(task, context: dict, settings_key: str, **run_task_kwargs) -> Any:
    """Prefect's task engine for one task run, inside this thread's settings and client: the
    serialized settings are taken out of the context the engine hydrates, so it does not build
    them again. Dask runs each call in a copy of the worker's context variables."""
    settings, client = _thread_contexts(context.get("settings_context") or {}, settings_key)
    context = {**context, "settings_context": {}}
    settings_token = SettingsContext.__var__.set(settings)
    client_token = SyncClientContext.__var__.set(client)
    try:
        if task.isasync:
            return asyncio.run(run_task_async(task=task, context=context, **run_task_kwargs))
        return run_task_sync(task=task, context=context, **run_task_kwargs)
    finally:
        SyncClientContext.__var__.reset(client_token)
        SettingsContext.__var__.reset(settings_token)


# The flow process's settings, their serialized form and a digest of it, computed by the first
# submit that sees them, and again only when a run's settings differ from the last ones seen.
_serialized_settings: tuple | None = None


@contextmanager
def _settings_serialized_once():
    """The current settings, as a SerializedSettings, while a task run is submitted; yields the
    digest of their serialized form, which names them in the workers' caches (equal settings
    from another settings object, e.g. the next run's temporary settings, find the same entry)."""
    global _serialized_settings
    current = SettingsContext.get()
    cached = _serialized_settings
    if cached is None or cached[0] is not current:  # holding `current` keeps `is` meaningful
        if (cached is not None and cached[0].settings == current.settings and cached[0].profile == current.profile
                and _fields_set(cached[0]) == _fields_set(current)):
            # equal settings with the same fields set serialize alike: a script that enters the
            # same temporary settings around every flow call makes a new settings object each
            # time, and comparing them (~0.8 ms) costs a thirtieth of serializing (~25 ms on 2
            # cores). Equal values alone are not enough: a field left unset is not sent, and the
            # workers take it from their own environment.
            cached = _serialized_settings = (current, cached[1], cached[2])
        else:
            serialized = SerializedSettings(profile=current.profile, settings=current.settings)
            serialized._serialized = current.serialize()
            digest = hashlib.sha256(json.dumps(serialized._serialized, sort_keys=True, default=str).encode()).hexdigest()
            cached = _serialized_settings = (current, serialized, digest)
    token = SettingsContext.__var__.set(cached[1])
    try:
        yield cached[2]
    finally:
        SettingsContext.__var__.reset(token)


def _fields_set(model: BaseModel) -> tuple:
    """Which fields of ``model`` and of the models it holds were set: what a dump that leaves
    out unset fields (SettingsContext.serialize) keeps."""
    return (type(model), frozenset(model.model_fields_set),
            tuple(_fields_set(value) for value in (getattr(model, name) for name in type(model).model_fields)
                  if isinstance(value, BaseModel)))


class SerializedSettings(SettingsContext):
    """The flow's current settings, with their serialized form computed once: what
    serialize_context reads while a task run is submitted."""

    _serialized: dict = PrivateAttr(default_factory=dict)

    def serialize(self, include_secrets: bool = True) -> dict[str, Any]:
        return self._serialized if include_secrets else super().serialize(include_secrets=False)


class ReusingDaskTaskRunner(DaskTaskRunner):
    """A DaskTaskRunner whose task runs reuse their worker thread's settings and API client
    (run_task_on_worker). Submitting is prefect_dask's: the task run's id, its inputs as
    dependencies, the serialized flow run context, futures passed to Dask as Dask futures so
    that Dask hands the upstream states to the task on the worker."""

    waits_for_published_artifacts = True  # tasks.artifacts.publish_summary relies on it (__exit__)

    def submit(self, task, parameters: dict[str, Any], wait_for=None, dependencies=None) -> PrefectDaskFuture:
        if not self._started:
            raise RuntimeError("The task runner must be started before submitting work.")
        parameters = self._optimize_futures(parameters)
        wait_for = self._optimize_futures(wait_for) if wait_for else None
        task_run_id = uuid.uuid4()
        inputs = {k: collect_task_run_inputs_sync(v, future_cls=distributed.Future) for k, v in parameters.items()}
        if dependencies:
            inputs = {k: v.union(dependencies.get(k, set())) for k, v in inputs.items()}
        with _settings_serialized_once() as settings_key:
            context = serialize_context(asset_ctx_kwargs={
                "task": task, "task_run_id": task_run_id, "task_inputs": inputs, "copy_to_child_ctx": True})
        future = distributed.Client.submit(
            self.client, run_task_on_worker, task=task, settings_key=settings_key, task_run_id=task_run_id,
            parameters=parameters,
            wait_for=wait_for, dependencies=inputs, context=context, return_type="state",
            key=f"{task.name}-{task_run_id.hex}", pure=False)
        return PrefectDaskFuture(wrapped_future=future, task_run_id=task_run_id)

    _early: Future | None = None
    _handing_over = threading.Lock()  # one duplicate, or one discard, takes an early cluster

    def start_cluster_early(self) -> None:
        """Start the cluster this runner would start on its first submit, now, in a thread of its
        own: the worker processes and their imports (~4 s on a GPU host) then overlap the flow
        run's creation (0.5-1 s in a process's first run). The cluster goes to this runner's
        next duplicate (Prefect runs each flow run on a duplicate of the flow's runner), which
        owns and closes it as if it had started it. Does nothing for a runner given an address
        or a cluster. The caller calls discard_early_cluster() once the flow run is over, in
        case no run took it. Context variables (Prefect's temporary settings) go along."""
        if self.address or self._cluster is not None or self._early is not None:
            return
        make = self.resolved_cluster_class or self.cluster_class or distributed.LocalCluster
        kwargs = dict(self.cluster_kwargs)
        self._early = Future()
        context = contextvars.copy_context()

        def start(future: Future) -> None:
            try:
                future.set_result(context.run(make, **kwargs))
            except BaseException as exc:  # the run that takes it reports it
                future.set_exception(exc)

        threading.Thread(target=start, args=(self._early,), name="dask-cluster-start", daemon=True).start()

    def discard_early_cluster(self) -> None:
        """Close a cluster started early that no flow run took: at once, or, while it is still
        starting, as soon as it has started. This does not wait for it (a run that failed
        before its first task reports at once; the workers also leave by themselves when this
        process ends)."""
        with self._handing_over:
            early, self._early = self._early, None
        if early is not None:
            early.add_done_callback(_close_started_cluster)

    def duplicate(self):
        copy = super().duplicate()
        with self._handing_over:
            copy._early, self._early = self._early, None
        if copy._early is not None:
            make = copy.resolved_cluster_class or copy.cluster_class or distributed.LocalCluster

            def take_early_cluster(**kwargs):
                """The cluster started early, once; a cluster made afresh after that."""
                taken, copy._early = copy._early, None
                if taken is None:
                    return make(**kwargs)
                try:
                    return taken.result()
                except BaseException:  # it failed to start, or Ctrl-C while it starts
                    taken.add_done_callback(_close_started_cluster)
                    raise

            take_early_cluster.__qualname__ = getattr(make, "__qualname__", "cluster")
            take_early_cluster.__module__ = getattr(make, "__module__", __name__)
            copy.cluster_class = copy.resolved_cluster_class = take_early_cluster
        return copy

    @property
    def client(self):
        if self._client is None:
            # a cluster started here, not an address's nor one found through the process's
            # Dask client (a flow run inside a Dask task): only such a cluster is closed quickly
            try:
                distributed.get_client()
                found = True
            except ValueError:
                found = False
            self._own_cluster = not found and not self.address and self._cluster is None
        return super().client

    def __exit__(self, *exc_info) -> None:
        """Close the Dask client, and the cluster if this runner started it. Its workers' Prefect
        logs and events are sent first; each worker process then leaves as soon as Dask has
        closed it, without the interpreter's teardown (Prefect's exit handlers, the CUDA
        context's release by the driver at exit), which took ~2 s of every run on a GPU. The
        flow run's final state is set before this runs.

        Prefect also enters a copy of this runner around every task run on a worker (the task
        run's hydrated flow run context). That copy never connects to Dask, and it does not wait
        for published artifacts: there it would hold each task run until its own artifacts were
        sent, the wait the background sender exists to take off the critical path."""
        submitted = self._client is not None
        if getattr(self, "_own_cluster", False) and self._client is not None:
            try:
                self._client.run(_leave_fast_after_sending_prefect_reports)
            except Exception:  # a worker already gone: the graceful close below still runs
                pass
        super().__exit__(*exc_info)
        self.discard_early_cluster()  # a run that submitted nothing did not take it
        if submitted:
            artifacts.wait_until_published()  # the run's summary, sent while Prefect recorded its end

    def end_run_on_workers(self, run_id) -> None:
        """Tell every worker that flow run ``run_id`` has ended (tasks.stopping.end_run): its
        tasks still running there publish nothing."""
        if self._client is not None:
            self._client.run(stopping.end_run, str(run_id), on_error="return")

    def wait_for_workers_artifacts(self, timeout: float = 30.0) -> None:
        """Wait until every worker has sent the artifacts its tasks published
        (tasks/artifacts.py): a run's tasks may have run on several. The run's last task waits
        for its own worker's, so a cluster of one worker needs no round trip."""
        if self._client is None or len(cluster_workers(self._client)) <= 1:
            return
        # a worker that has left answers with its error rather than failing the run
        self._client.run(artifacts.wait_on_dask_worker, timeout, on_error="return")


def _close_started_cluster(started: Future) -> None:
    if started.exception() is not None:  # one that failed to start has nothing to close
        return
    try:
        started.result().close()
    except Exception:  # at interpreter exit distributed closes every cluster too: one close wins
        pass


async def _leave_fast_after_sending_prefect_reports(timeout: float = 10) -> None:
    """On a worker of a cluster about to close: send the artifacts its tasks published
    (tasks/artifacts.py) and the logs and events Prefect still holds,
    then let the process end at once when it exits (os._exit as the first exit handler).
    A coroutine, so that Dask awaits it in the worker's event loop: there Prefect's drain_all
    returns an awaitable, and only awaiting it waits for the sending."""
    import atexit
    import inspect
    import os
    import sys

    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    await asyncio.to_thread(artifacts.wait_until_published, timeout)
    for service in (APILogWorker, EventsWorker):
        drained = service.drain_all(timeout=timeout)
        if inspect.isawaitable(drained):
            await drained

    def leave() -> None:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(0)

    atexit.register(leave)
