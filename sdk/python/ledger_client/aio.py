"""The asyncio variant: a Worker whose handler is a coroutine.

    async def handle(lease: AsyncLease) -> None:
        await lease.checkpoint(Phase.ACTING, "step-1")
        await asyncio.sleep(5)  # cancelled at once when the lease is lost, cancelled or shut down

    async_worker(client, handle, release_id=..., adapter_version=..., model_profile_id=...).run()

Each claimed run's coroutine runs on an event loop of its own, on the Worker's thread for that
run; the Lease's calls go to a thread (asyncio.to_thread), so they never block the loop. Unlike
a thread, a coroutine can be interrupted: when the lease must stop (lost, cancelled, shut
down), the handler's task is cancelled and the Worker sees what check() raises, so it settles
the run exactly as for a thread handler that raised it.
"""

from __future__ import annotations

import asyncio
import threading
from datetime import datetime
from typing import Any, Awaitable, Callable, List, Optional, TypeVar

from .client import Client
from .lease import Lease
from .wire import (Attempt, AttemptError, Call, CallFinishStatus, CallKind, Checkpoint, CompletionState, Decision,
                   DecisionKind, Delegation, LastCheckpoint, Phase, Run, RunSpec, Usage)
from .worker import Worker

T = TypeVar("T")

AsyncHandler = Callable[["AsyncLease"], Awaitable[None]]


class AsyncLease:
    """A Lease for coroutines: the same writes, awaited (each runs on a thread)."""

    def __init__(self, lease: Lease) -> None:
        self.lease = lease

    @property
    def run(self) -> Run:
        return self.lease.run

    @property
    def run_id(self) -> str:
        return self.lease.run_id

    @property
    def attempt_id(self) -> str:
        return self.lease.attempt_id

    @property
    def fencing_token(self) -> int:
        return self.lease.fencing_token

    @property
    def input(self) -> Any:
        return self.lease.input

    def check(self) -> None:
        self.lease.check()

    async def _call(self, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        return await asyncio.to_thread(fn, *args, **kw)

    async def resume(self) -> Optional[LastCheckpoint]:
        return await self._call(self.lease.resume)

    async def checkpoint(self, phase: Phase, state_ref: str, *, hash: Optional[str] = None,
                         context_snapshot_ref: Optional[str] = None) -> Checkpoint:
        return await self._call(self.lease.checkpoint, phase, state_ref, hash=hash,
                                context_snapshot_ref=context_snapshot_ref)

    async def record_call(self, kind: CallKind, target: str, *, request_hash: Optional[str] = None,
                          model: Optional[str] = None, provider: Optional[str] = None,
                          operation: Optional[str] = None) -> Call:
        return await self._call(self.lease.record_call, kind, target, request_hash=request_hash, model=model,
                                provider=provider, operation=operation)

    async def finish_call(self, call_id: str, status: CallFinishStatus, receipt_ref: Optional[str] = None, *,
                          usage: Optional[Usage] = None, response_model: Optional[str] = None,
                          finish_reasons: Optional[List[str]] = None, cost_micros: Optional[int] = None) -> Call:
        return await self._call(self.lease.finish_call, call_id, status, receipt_ref, usage=usage,
                                response_model=response_model, finish_reasons=finish_reasons,
                                cost_micros=cost_micros)

    async def set_phase(self, phase: Phase) -> Attempt:
        return await self._call(self.lease.set_phase, phase)

    async def request_decision(self, kind: DecisionKind, *, options: Any = None,
                               recommendation: Optional[str] = None, key: Optional[str] = None) -> Decision:
        return await self._call(self.lease.request_decision, kind, options=options, recommendation=recommendation,
                                key=key)

    async def park(self, decision_ids: Optional[List[str]] = None, child_run_ids: Optional[List[str]] = None,
                   due_at: Optional[datetime] = None) -> Attempt:
        return await self._call(self.lease.park, decision_ids, child_run_ids, due_at)

    async def wait_decision(self, decision_id: str, timeout: Optional[float] = None) -> Decision:
        return await self._call(self.lease.wait_decision, decision_id, timeout)

    async def delegate(self, purpose: str, child: RunSpec) -> Delegation:
        return await self._call(self.lease.delegate, purpose, child)

    async def wait_delegation(self, delegation_id: str, timeout: Optional[float] = None) -> Delegation:
        return await self._call(self.lease.wait_delegation, delegation_id, timeout)

    async def decide(self, kind: DecisionKind, *, options: Any = None, recommendation: Optional[str] = None,
                     expires_in: Optional[float] = None, key: Optional[str] = None) -> Decision:
        """Lease.decide: keyed by the call's order when key is None; raises Parked when it parked."""
        return await self._call(self.lease.decide, kind, options=options, recommendation=recommendation,
                                expires_in=expires_in, key=key)

    async def wait_children(self, child_run_ids: List[str]) -> List[Run]:
        """Lease.wait_children: raises Parked when it parked."""
        return await self._call(self.lease.wait_children, child_run_ids)

    async def delegate_step(self, key: str, purpose: str, child: RunSpec) -> Delegation:
        """Lease.delegate_step: the child's ids derived from the parent's lease."""
        return await self._call(self.lease.delegate_step, key, purpose, child)

    async def complete(self, state: CompletionState, outcome_hash: Optional[str] = None, *,
                       error: Optional[AttemptError] = None) -> Attempt:
        return await self._call(self.lease.complete, state, outcome_hash, error=error)

    async def release(self, charge: bool = False, retry_after: Optional[float] = None, *,
                      error: Optional[AttemptError] = None) -> Attempt:
        return await self._call(self.lease.release, charge, retry_after, error=error)


async def _run_handler(handler: AsyncHandler, lease: Lease) -> None:
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(handler(AsyncLease(lease)))
    finished = threading.Event()

    def watch() -> None:
        """Cancels the handler's task once the lease must stop (its stopping event is a
        threading.Event, so a thread waits on it)."""
        while not finished.is_set():
            if lease.stopping.wait(0.05):
                try:
                    loop.call_soon_threadsafe(task.cancel)
                except RuntimeError:
                    pass  # the loop closed: the handler had returned
                return

    threading.Thread(target=watch, name="ledger-aio-watch", daemon=True).start()
    try:
        await task
    except asyncio.CancelledError:
        lease.check()  # raises why: LeaseLost, CancelRequested or WorkerShutdown
        raise
    finally:
        finished.set()


def async_worker(client: Client, handler: AsyncHandler, **kw: Any) -> Worker:
    """A Worker (same options) that runs a coroutine handler for each run, on an event loop of
    its own, cancelling it when its lease must stop."""
    return Worker(client, lambda lease: asyncio.run(_run_handler(handler, lease)), **kw)
