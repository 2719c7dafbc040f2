"""The phases that need the operator: singles, batches, idle, footprint, restart, and
single deployments while a batch is resident."""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from opbench import loaded, profile, report
from opbench.api import GROUP_PATH, WRITE_VERBS, Client, not_bench
from opbench.collector import Collector, Key
from opbench.figures import lat, per_deployment, reads_of_deployments, wall
from opbench.idle import idle
from opbench.procs import Child, CpuMeter, SimCluster
from opbench.statusdiff import status_changes
from opbench.workload import create, expected_children, layout, manifest

_START_SECONDS = 60.0
_SAMPLE_SECONDS = 0.25


class OperatorExitedError(RuntimeError):
    pass


def quiet_span(
    samples: list[tuple[float, float]], span: float, share: float
) -> tuple[list[tuple[float, float]], bool]:
    """``samples``: (when, CPU seconds used so far), oldest first. The samples still needed
    (the newest and those at most ``span`` + 1 s older), and whether the process used under
    ``share`` of a CPU from the oldest of them that is ``span`` or more before the newest."""
    now, cpu = samples[-1]
    kept = [s for s in samples if now - s[0] <= span + 1.0]
    covering = [s for s in kept if now - s[0] >= span]
    if not covering:
        return kept, False
    at, used = covering[-1]
    return kept, (cpu - used) / (now - at) < share


class OperatorPhases:
    def __init__(
        self,
        client: Client,
        collector: Collector,
        sim: SimCluster,
        args: argparse.Namespace,
        *,
        env: dict[str, str],
        gpus: Any,
    ) -> None:
        self.client, self.collector, self.sim, self.args = client, collector, sim, args
        self.env, self.gpus = env, gpus
        # The control plane's CPU over a second when nothing happens (node Leases, its own
        # loops): quiet() waits for the cluster to be back near it.
        self.control_plane_idle = 0.0
        self.operator: Child | None = None
        self.log_tails: list[str] = []

    async def run(self, results: dict[str, Any]) -> None:
        if self.args.operator_argv is None:
            for section in ("convergence", "api", "footprint", "restart"):
                results[section] = {"error": "no operator (--operator-cmd none)"}
            return
        results["operator"] = {"argv": self.args.operator_argv}
        try:
            report.say("starting the operator")
            results["operator"]["start_s"] = await self.start()
            results["convergence"] = {"batches": {}}
            results["api"] = {"batches": {}}
            results["footprint"] = {}
            await self.singles(results)
            for size in self.args.sizes:
                # Idle and restart are measured at --idle-at deployments (the issue: 1,000);
                # the larger sizes come after, once those are deleted.
                at_idle = size == self.args.idle_at
                await self.batch(size, results, last=at_idle)
                if at_idle:
                    await idle(self, results)
                    results["restart"] = await self.restart()
                    # Kept until the batch goes, and deleted with it.
                    resident = await self.loaded_singles(size, results)
                    if size != self.args.sizes[-1]:
                        keys = layout(f"b{size}", size, self.args.namespaces)
                        results["convergence"]["batches"][str(size)][
                            "delete_s"
                        ] = await self.delete({k[0] for k in keys} | resident)
        except OperatorExitedError as exc:
            message = f"the operator exited: {exc}"
            for section in ("convergence", "api", "footprint", "restart"):
                results.setdefault(section, {})
                if not results[section] or section == "restart":
                    results[section] = {"error": message}
                else:
                    results[section]["error"] = message
        finally:
            if self.operator is not None:
                results["operator"]["exit_code"] = self.operator.stop()
                results["operator"]["log_tail"] = self.operator.tail(30).splitlines()
                results["operator"]["log_lines"] = self.operator.line_count

    # --- the operator process --------------------------------------------------------------------

    async def start(self) -> float:
        """Start the operator; seconds until it watches NemotronDeployments."""
        await self.client.reset_counts()
        self.operator = Child(self.args.operator_argv, self.env, "operator")
        deadline = time.monotonic() + _START_SECONDS
        while time.monotonic() < deadline:
            self.check_alive()
            counts = await self.client.counts()
            if any(
                r["verb"] == "watch" and r["resource"] == "nemotrondeployments"
                for r in counts.of(not_bench)
            ):
                return round(time.perf_counter() - self.operator.started, 2)
            await asyncio.sleep(0.1)
        raise OperatorExitedError(f"no watch on nemotrondeployments within {_START_SECONDS:.0f} s")

    def check_alive(self) -> None:
        if self.operator is not None and not self.operator.alive():
            code = self.operator.process.returncode
            raise OperatorExitedError(f"exit code {code}:\n{self.operator.tail()}")

    def running(self) -> Child:
        self.check_alive()
        assert self.operator is not None
        return self.operator

    async def wait(self, keys: list[Key], what: str, seconds: float) -> bool:
        """Wait for the collector, failing early if the operator dies."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.check_alive()
            if await self.collector.wait(keys, what, min(2.0, deadline - time.monotonic())):
                return True
        return False

    async def statuses(self) -> dict[Key, dict[str, Any]]:
        listing = await self.client.send("GET", f"{GROUP_PATH}/nemotrondeployments")
        return {
            (i["metadata"]["namespace"], i["metadata"]["name"]): i.get("status") or {}
            for i in listing["items"]
        }

    # --- phases ----------------------------------------------------------------------------------

    async def prepare(self, keys: list[Key]) -> None:
        for namespace in sorted({k[0] for k in keys}):
            await self.client.ensure_namespace(namespace)
        for key in keys:
            self.collector.expect(key, expected_children(manifest(*key), self.gpus))

    async def singles(self, results: dict[str, Any]) -> None:
        """One deployment at a time on an idle operator: the latency a user sees."""
        keys = [("single", f"single-{i:02d}") for i in range(self.args.singles)]
        report.say(f"operator: {len(keys)} single deployments, one at a time")
        await self.prepare(keys)
        results["convergence"]["single_waited_for_quiet_s"] = await self.quiet()
        await self.client.reset_counts()
        for key in keys:
            await create(self.client, self.collector, key)
            await self.wait([key], "ready", 60)
        counts = await self.client.counts()
        results["convergence"]["single"] = {
            "converged": lat(self.collector, keys, "converged"),
            "ready": lat(self.collector, keys, "ready"),
            "converged_ms_in_order": [
                round(1000 * (self.collector.tracks[k].latency("converged") or 0), 1) for k in keys
            ],
        }
        results["api"]["single"] = per_deployment(counts, len(keys))
        results["convergence"]["single"]["delete_s"] = await self.delete({"single"})

    async def loaded_singles(self, resident: int, results: dict[str, Any]) -> set[str]:
        """``--loaded-singles`` deployments one at a time while ``resident`` are (opbench.loaded);
        their namespace, kept until the batch's are deleted."""
        if not self.args.loaded_singles:
            return set()
        results["convergence"]["loaded_single"] = await loaded.operator_loaded(self, resident)
        return {loaded.NAMESPACE}

    async def batch(self, size: int, results: dict[str, Any], *, last: bool) -> None:
        keys = layout(f"b{size}", size, self.args.namespaces)
        report.say(f"operator: {size} deployments at once")
        await self.prepare(keys)
        await self.quiet()
        operator = self.running()
        await self.client.reset_counts()
        cpu, meter = operator.cpu_seconds(), CpuMeter(self.sim)
        window = await profile.start(self.args, "operator", size, operator.pid)
        start = time.perf_counter()
        gate = asyncio.Semaphore(self.args.concurrency)

        async def one(key: Key) -> None:
            async with gate:
                await create(self.client, self.collector, key)

        await asyncio.gather(*(one(k) for k in keys))
        created = time.perf_counter() - start
        converged = await self.wait(keys, "converged", self.args.timeout)
        at_convergence = await self.client.counts()
        cpu_converged = operator.cpu_seconds() - cpu
        # The processes share the machine's cores: what each spent in this window.
        to_converge = meter.spent()
        rss_converged = operator.rss_mib()
        await window.converged()
        ready = converged and await self.wait(keys, "ready", self.args.timeout)
        at_ready = await self.client.counts()
        to_ready = meter.spent()
        # The idle window must not start while the status still follows the cluster: on the
        # real control plane the StatefulSet's status can trail its pod's readiness.
        unsettled = len(self.collector.pending(keys, "settled"))
        await window.finish()
        settled = ready and await self.wait(keys, "settled", self.args.timeout)
        at_settled = await self.client.counts()
        row: dict[str, Any] = {
            "create_wall_s": round(created, 2),
            "converged": lat(self.collector, keys, "converged"),
            "converged_wall_s": wall(self.collector, keys, "converged", start),
            "ready": lat(self.collector, keys, "ready"),
            "ready_wall_s": wall(self.collector, keys, "ready", start),
            "settled_wall_s": wall(self.collector, keys, "settled", start),
            "not_settled_at_ready": unsettled,
            "operator_cpu_s_to_converge": round(cpu_converged, 2),
            # cluster = control plane + simulator (one process before the real control plane)
            "cluster_cpu_s_to_converge": to_converge["cluster"],
            "control_plane_cpu_s_to_converge": to_converge["control_plane"],
            "simulator_cpu_s_to_converge": to_converge["simulator"],
            "bench_cpu_s_to_converge": to_converge["bench"],
            "operator_cpu_s_to_ready": round(operator.cpu_seconds() - cpu, 2),
            "cluster_cpu_s_to_ready": to_ready["cluster"],
            "control_plane_cpu_s_to_ready": to_ready["control_plane"],
            "simulator_cpu_s_to_ready": to_ready["simulator"],
            "operator_rss_mib": round(operator.rss_mib(), 1),
        }
        if not converged or not ready or not settled:
            what = "converged" if not converged else "ready" if not ready else "settled"
            pending = self.collector.pending(keys, what)
            row["timeout"] = f"{len(pending)} not {what} after {self.args.timeout:.0f} s"
        results["convergence"]["batches"][str(size)] = row
        results["api"]["batches"][str(size)] = {
            **per_deployment(at_convergence, size),
            "to_ready": per_deployment(at_ready, size),
            "to_settled": per_deployment(at_settled, size),
        }
        if last:
            results["footprint"].update(
                deployments=size,
                rss_mib_converged=round(rss_converged, 1),
                cpu_s_to_converge=round(cpu_converged, 2),
                cpu_s_to_ready=row["operator_cpu_s_to_ready"],
            )
        elif size != self.args.sizes[-1]:  # the last size's are gone with the cluster
            row["delete_s"] = await self.delete({k[0] for k in keys})

    async def quiet(self, limit: float = 60.0) -> float:
        """Wait until the simulator and the operator each use under 20 % of a CPU over a
        second, and the control plane under 20 % more than when idle (the previous phase's
        deletions and pods settle first); seconds waited, at most ``limit``."""
        start = time.perf_counter()
        operator = self.running()
        while time.perf_counter() - start < limit:
            sim, own = self.sim.cpu_seconds(), operator.cpu_seconds()
            plane = self.sim.control_plane_cpu_seconds()
            await asyncio.sleep(1.0)
            if (
                self.sim.cpu_seconds() - sim < 0.2
                and operator.cpu_seconds() - own < 0.2
                and self.sim.control_plane_cpu_seconds() - plane < self.control_plane_idle + 0.2
            ):
                break
        return round(time.perf_counter() - start, 1)

    async def quiet_over_interval(self, limit: float, share: float = 0.05) -> float:
        """Until the operator has used under ``share`` of a CPU over a whole scrape interval
        (every resident deployment's timer tick falls inside it; idle is ~1.5 %), then until
        :meth:`quiet`; seconds waited in all, at most ``limit`` (then ``quiet``'s own)."""
        start = time.perf_counter()
        span = self.scrape_seconds()
        samples: list[tuple[float, float]] = []  # (when, the operator's CPU seconds)
        while time.perf_counter() - start < limit:
            samples.append((time.perf_counter(), self.running().cpu_seconds()))
            samples, quiet = quiet_span(samples, span, share)
            if quiet:
                break
            await asyncio.sleep(1.0)
        await self.quiet()
        return round(time.perf_counter() - start, 1)

    async def delete(self, namespaces: set[str]) -> float | str:
        try:
            seconds = await self.client.delete_namespaces(
                namespaces, self.args.timeout, until_gone=self.args.mode != "tiny"
            )
            return round(seconds, 2)
        except RuntimeError as exc:
            return str(exc)

    async def quiet_writes(self, quiet: float = 1.0, bound: float = 10.0) -> None:
        """Until the operator has written nothing (Lease apart) for ``quiet`` seconds, at most
        ``bound``: a status write and the Events of its condition changes are two requests, and
        an idle window that starts between them would count the Event without the change."""
        deadline = time.monotonic() + bound
        while time.monotonic() < deadline:
            counts = await self.client.counts()
            latest = max(
                (r["last"] for r in counts.of(not_bench)
                 if r["verb"] in WRITE_VERBS and r["resource"] != "leases"),
                default=0.0,
            )  # fmt: skip
            if time.time() - latest >= quiet:
                return
            await asyncio.sleep(0.2)

    def scrape_seconds(self) -> float:
        """The operator's --scrape-seconds (from its environment or command line; default 30)."""
        argv = self.args.operator_argv or []
        for index, arg in enumerate(argv):
            if arg.startswith("--scrape-seconds="):
                return float(arg.split("=", 1)[1])
            if arg == "--scrape-seconds" and index + 1 < len(argv):
                return float(argv[index + 1])
        return float(self.env.get("NEMOTRON_OPERATOR_SCRAPE_SECONDS", 30.0))

    async def first_ticks_after_ready(self) -> float:
        """Until two scrape intervals (+ 5 s) have passed since the last deployment settled: a
        pod's first sample (at Ready) is a base, and the first timer tick after Ready has its
        first rates (docs/observability.md): a figure that moved then (traffic since Ready)
        belongs to the rollout, not to idle. Seconds waited."""
        settled = [t.settled for t in self.collector.tracks.values() if t.settled is not None]
        if not settled:
            return 0.0
        # A tick within half an interval of the reconcile's first sample skips it: the first
        # rates after Ready can come two intervals later.
        wait = max(settled) + 2 * self.scrape_seconds() + 5.0 - time.perf_counter()
        if wait > 0:
            await asyncio.sleep(wait)
        return round(max(0.0, wait), 1)

    async def restart(self) -> dict[str, Any]:
        """Stop the operator, start it again; how long until it is quiet, and what it wrote.

        Resynced = the operator has read every deployment back (one GET each, or a LIST: an
        operator reading its objects from kopf's watch lists them once) and then, for
        ``settle`` seconds, neither sent a request (other than its open watches) nor used more
        than 5 % of a CPU. A restarted operator that waits for
        its predecessor's Lease to expire is not resynced until it has done the work.
        """
        assert self.operator is not None
        count = await self.client.count_deployments()
        report.say(f"operator: restart with {count} deployments")
        before = await self.statuses()
        stop_start = time.perf_counter()
        exit_code = self.operator.stop()
        stopped_s = time.perf_counter() - stop_start
        previous_log = self.operator.tail(15).splitlines()  # after the stop: how it ended
        self.operator = None
        started_wall = time.time()
        watching_s = await self.start()
        operator = self.running()
        settle = self.args.restart_settle_seconds
        last_busy = time.perf_counter()
        cpu = operator.cpu_seconds()
        deadline = time.monotonic() + self.args.timeout
        counts = await self.client.counts()
        last_request = counts.last_request(not_bench, exclude_verbs={"watch"})
        read_back = 0
        while time.monotonic() < deadline:
            await asyncio.sleep(_SAMPLE_SECONDS)
            now_cpu = self.running().cpu_seconds()
            counts = await self.client.counts()
            latest = counts.last_request(not_bench, exclude_verbs={"watch"})
            if now_cpu - cpu > 0.05 * _SAMPLE_SECONDS or latest > last_request:
                last_busy = time.perf_counter()
            cpu, last_request = now_cpu, latest
            read_back = reads_of_deployments(counts, count)
            if read_back >= count and time.perf_counter() - last_busy >= settle:
                break
        resynced = read_back >= count
        resync_s = last_busy - operator.started if resynced else None
        changed = status_changes(before, await self.statuses())
        return {
            "status_changes": changed,
            "deployments": count,
            "previous_exit_code": exit_code,
            "stop_s": round(stopped_s, 2),
            "watching_s": watching_s,
            "resync_s": None if resync_s is None else round(resync_s, 2),
            "deployments_read_back": read_back,
            "previous_log_tail": previous_log,
            "last_request_s": round(max(0.0, last_request - started_wall), 2),
            "settle_s": settle,
            "writes": counts.writes(not_bench),
            "lease_writes": counts.writes(not_bench, leases=True),
            "by_verb": counts.by_verb(not_bench),
            "by_verb_and_resource": counts.by_verb_and_resource(not_bench),
            "cpu_s": round(operator.cpu_seconds(), 2),
            "rss_mib": round(operator.rss_mib(), 1),
        }
