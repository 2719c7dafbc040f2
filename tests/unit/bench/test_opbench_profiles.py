"""The benchmark's profile summaries (opbench.stacks, .pyspy, .pprof, .serverside, .profile):
small fixed inputs in the formats py-spy, ``go tool pprof`` and kube-apiserver's /metrics
write, and the figures they must give."""
# ruff: noqa: E501  (the fixtures are lines as the tools print them, unwrapped)

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from opbench import pprof, profile, pyspy, serverside
from opbench.stacks import Bucket, parse_collapsed, short_frame, summarise

SITE = "/opt/venv/lib/python3.11/site-packages"
STDLIB = "/opt/python/lib/python3.11"
ROOT_FRAMES = (
    f"<module> ({SITE}/nemotron_operator/cli/__main__.py:1);"
    f"run ({STDLIB}/asyncio/runners.py:160);"
    "reconcile (/src/operator/nemotron_operator/controller/reconcile/reconciler.py:50)"
)
COLLAPSED = f"""\
{ROOT_FRAMES};patch_status (nemotron_operator/kube/writes.py:72);dumps ({STDLIB}/json/__init__.py:183) 30
{ROOT_FRAMES};apply_child (nemotron_operator/kube/writes.py:35);dumps ({STDLIB}/json/__init__.py:183) 20
run ({STDLIB}/asyncio/runners.py:160);_events (nemotron_operator/kube/transport.py:253);loads ({STDLIB}/json/__init__.py:299) 40
run ({STDLIB}/asyncio/runners.py:160);walk (x.py:1);walk (x.py:1);walk (x.py:1);spawn ({SITE}/kopf/_core/reactor/queueing.py:100) 10
"""


def test_frames_are_made_package_relative() -> None:
    assert short_frame(f"dumps ({STDLIB}/json/__init__.py:183)") == "dumps (json/__init__.py:183)"
    assert short_frame(f"spawn ({SITE}/kopf/_core/q.py:9)") == "spawn (kopf/_core/q.py:9)"
    assert (
        short_frame("f (/src/operator/nemotron_operator/kube/store.py:41)")
        == "f (nemotron_operator/kube/store.py:41)"
    )
    assert short_frame("<no frame>") == "<no frame>"


def test_collapsed_stacks_give_totals_tops_and_exclusive_buckets() -> None:
    out = summarise(parse_collapsed(COLLAPSED)[0], pyspy.OPERATOR_BUCKETS, top=3)
    assert out["samples"] == 100
    assert out["top_self"] == [
        {"function": "dumps (json/__init__.py:183)", "samples": 50, "percent": 50.0},
        {"function": "loads (json/__init__.py:299)", "samples": 40, "percent": 40.0},
        {"function": "spawn (kopf/_core/reactor/queueing.py:100)", "samples": 10, "percent": 10.0},
    ]
    inclusive = {r["function"]: r["samples"] for r in out["top_inclusive"]}
    assert inclusive == {
        "run (asyncio/runners.py:160)": 100,
        "dumps (json/__init__.py:183)": 50,
        "<module> (nemotron_operator/cli/__main__.py:1)": 50,
    }
    buckets = {name: b["samples"] for name, b in out["buckets"].items() if b["samples"]}
    # The JSON encoding is the status patch's and the apply's: the first bucket matching wins.
    assert buckets == {
        "watch event decoding and caches": 40,
        "status patches": 30,
        "child applies": 20,
        "kopf": 10,
    }
    assert out["buckets"]["status patches"]["percent"] == 30.0


def test_a_recursive_frame_counts_once_per_stack_and_unmatched_stacks_are_other() -> None:
    stacks, _ = parse_collapsed("a (x.py:1);a (x.py:1);b (y.py:2) 4\nc (z.py:3) 6\n")
    out = summarise(stacks, (Bucket.of("b", r"^b "),), top=5)
    assert {r["function"]: r["samples"] for r in out["top_inclusive"]}["a (x.py:1)"] == 4
    assert out["buckets"] == {
        "other": {"samples": 6, "percent": 60.0},
        "b": {"samples": 4, "percent": 40.0},
    }


def test_torn_lines_are_skipped_and_counted() -> None:
    stacks, skipped = parse_collapsed("a (x.py:1);b (torn\n1\nname:3) 2\nc (z.py:3) x\n")
    assert stacks == [(("name:3)",), 2.0)]
    assert skipped == 3


def test_waiting_is_idle_only_as_the_running_frame(tmp_path: Path) -> None:
    waiting = (
        f"run ({STDLIB}/asyncio/runners.py:160);EpollSelector.select ({STDLIB}/selectors.py:451) 25"
    )
    below = f"EpollSelector.select ({STDLIB}/selectors.py:451);reconcile (r.py:1) 5"
    raw = tmp_path / "raw.txt"
    raw.write_text(f"{waiting}\n{below}\n")
    out = pyspy.summary(raw, seconds=1.0)
    assert out["buckets"][pyspy.IDLE]["samples"] == 25
    assert out["buckets"]["other"]["samples"] == 5
    assert out["busy_percent"] == 10.0  # 5 busy samples of 50 possible


PPROF_TOP = """\
File: kube-apiserver
Type: cpu
Time: 2026-12-06 12:20:24 UTC
Duration: 1.50mins, Total samples = 61.20s (68.00%)
Showing nodes accounting for 30.50s, 49.84% of 61.20s total
Dropped 900 nodes (cum <= 0.31s)
Showing top 3 nodes out of 1500
      flat  flat%   sum%        cum   cum%
     6.12s 10.00% 10.00%      6.50s 10.62%  runtime.memmove
     450ms  0.74% 10.74%     20.10s 32.84%  k8s.io/apiserver/pkg/storage/cacher.(*cacheWatcher).process
      10ms 0.016% 10.75%       20ms 0.033%  slices.SortFunc[go.shape.struct { a int }] (inline)
"""


def test_pprof_top_rows_and_header() -> None:
    assert pprof.parse_header(PPROF_TOP) == {"duration_s": 90.0, "cpu_s": 61.2}
    rows = pprof.parse_top(PPROF_TOP)
    assert rows == [
        {"function": "runtime.memmove", "flat_s": 6.12, "flat_percent": 10.0,
         "cum_s": 6.5, "cum_percent": 10.62},
        {"function": "k8s.io/apiserver/pkg/storage/cacher.(*cacheWatcher).process",
         "flat_s": 0.45, "flat_percent": 0.74, "cum_s": 20.1, "cum_percent": 32.84},
        {"function": "slices.SortFunc[go.shape.struct { a int }]", "flat_s": 0.01,
         "flat_percent": 0.016, "cum_s": 0.02, "cum_percent": 0.033},
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("870ms", 0.87), ("1.50s", 1.5), ("2mins", 120.0), ("0", 0.0), ("250us", 0.00025)],
)
def test_pprof_durations(text: str, seconds: float) -> None:
    assert pprof.seconds(text) == pytest.approx(seconds)


PPROF_TRACES = """\
File: kube-apiserver
Type: cpu
-----------+-------------------------------------------------------
     300ms   encoding/json.(*encodeState).marshal
             k8s.io/apiserver/pkg/storage/cacher.(*cacheWatcher).process
             runtime.goexit
-----------+-------------------------------------------------------
         key:  value
     200ms   sigs.k8s.io/structured-merge-diff/v6/typed.(*TypedValue).Merge
             k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager.(*FieldManager).Apply
             k8s.io/apiserver/pkg/endpoints/handlers.PatchResource.func1
             net/http.(*conn).serve
-----------+-------------------------------------------------------
      1.5s   runtime.scanobject (inline)
             runtime.gcBgMarkWorker
-----------+-------------------------------------------------------
      10ms   go.etcd.io/etcd/client/v3.(*watchGrpcStream).run
-----------+-------------------------------------------------------
      40ms   encoding/json.Unmarshal
             k8s.io/apiserver/pkg/storage/etcd3.(*store).GuaranteedUpdate
             k8s.io/apiserver/pkg/storage/cacher.(*CacheDelegator).GuaranteedUpdate
             k8s.io/apiserver/pkg/endpoints/handlers.(*patcher).patchResource.func2
             k8s.io/apiserver/pkg/endpoints/handlers/finisher.finishRequest.func1
-----------+-------------------------------------------------------
"""


def test_pprof_traces_go_to_work_and_request_buckets() -> None:
    stacks = pprof.parse_traces(PPROF_TRACES)
    assert stacks[0] == (
        (
            "runtime.goexit",
            "k8s.io/apiserver/pkg/storage/cacher.(*cacheWatcher).process",
            "encoding/json.(*encodeState).marshal",
        ),
        0.3,
    )
    assert [round(v, 3) for _, v in stacks] == [0.3, 0.2, 1.5, 0.01, 0.04]
    assert stacks[2][0][-1] == "runtime.scanobject"  # "(inline)" dropped
    work = summarise(stacks, pprof.WORK_BUCKETS, unit="cpu_s")["buckets"]
    # An update goes through the cacher package's CacheDelegator: not the watches' work.
    assert work["watch cache and fan-out (its encoding included)"]["cpu_s"] == 0.3
    assert work["serialization (JSON, protobuf, conversion)"]["cpu_s"] == 0.04
    assert work["apply and managedFields"]["cpu_s"] == 0.2
    assert work["Go GC (background)"]["cpu_s"] == 1.5
    assert work["etcd (client and storage)"]["cpu_s"] == 0.01
    requests = summarise(stacks, pprof.REQUEST_BUCKETS, unit="cpu_s")["buckets"]
    assert requests["watch"]["cpu_s"] == 0.3
    assert requests["patch and apply"]["cpu_s"] == 0.24


METRICS_BEFORE = """\
# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",group="",resource="events",scope="namespace",subresource="",verb="POST",version="v1"} 10
apiserver_request_total{code="200",component="apiserver",group="serving.nemotron.io",resource="nemotrondeployments",scope="namespace",subresource="status",verb="PATCH",version="v1alpha1"} 100
apiserver_request_duration_seconds_sum{component="apiserver",dry_run="",group="",resource="events",scope="namespace",subresource="",verb="POST",version="v1"} 0.5
apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="",resource="events",scope="namespace",subresource="",verb="POST",version="v1"} 10
apiserver_watch_events_total{group="apps",kind="StatefulSet",version="v1"} 7
apiserver_watch_events_sizes_sum{group="apps",kind="StatefulSet",version="v1"} 7000
"""
METRICS_AFTER = """\
apiserver_request_total{code="201",component="apiserver",group="",resource="events",scope="namespace",subresource="",verb="POST",version="v1"} 30
apiserver_request_total{code="409",component="apiserver",group="serving.nemotron.io",resource="nemotrondeployments",scope="namespace",subresource="status",verb="PATCH",version="v1alpha1"} 4
apiserver_request_total{code="200",component="apiserver",group="serving.nemotron.io",resource="nemotrondeployments",scope="namespace",subresource="status",verb="PATCH",version="v1alpha1"} 136
apiserver_request_duration_seconds_sum{component="apiserver",dry_run="",group="",resource="events",scope="namespace",subresource="",verb="POST",version="v1"} 2.5
apiserver_watch_events_total{group="apps",kind="StatefulSet",version="v1"} 47
apiserver_watch_events_total{group="",resource="pods",version="v1"} 20
apiserver_watch_events_sizes_sum{group="apps",kind="StatefulSet",version="v1"} 47000
"""


def test_window_metrics_per_deployment() -> None:
    before = serverside.window_metrics(METRICS_BEFORE)
    after = serverside.window_metrics(METRICS_AFTER)
    assert after["requests"] == {
        "POST events": 30.0,
        "PATCH nemotrondeployments/status": 140.0,
    }
    moved = serverside.window_difference(before, after, per=4)
    assert moved == {
        "requests": {"PATCH nemotrondeployments/status": 10.0, "POST events": 5.0},
        "request_seconds": {"POST events": 0.5},
        "watch_events": {"StatefulSet.apps": 10.0, "pods": 5.0},
        "watch_event_bytes": {"StatefulSet.apps": 10000.0},
    }
    # The idle check's reading of the same counter is unchanged.
    assert serverside.request_totals(METRICS_AFTER)["POST events"] == 30.0


def test_a_window_named_by_its_phase_has_its_metrics_under_that_phase() -> None:
    """The loaded singles' window has one phase, "loaded" (no "converged" scrape)."""
    window = profile.Window(None, profile.LOADED, 4, phase="loaded")
    window.metrics = [
        ("start", serverside.window_metrics(METRICS_BEFORE)),
        ("end", serverside.window_metrics(METRICS_AFTER)),
    ]
    row = profile._window(window, None, [])
    assert list(row["metrics_per_deployment"]) == ["loaded"]
    assert row["metrics_per_deployment"]["loaded"]["requests"]["POST events"] == 5.0


def test_comparison_is_per_deployment_with_the_largest_extra_first() -> None:
    def window(cpu: float, watch: float, patch: float, requests: float) -> dict[str, object]:
        return {
            "apiserver": {"to_converged": {
                "cpu_s": cpu,
                "buckets": {"watch": {"cpu_s": watch}, "apply": {"cpu_s": patch}},
                "by_request": {"watch": {"cpu_s": watch}},
            }},
            "metrics_per_deployment": {"to_converged": {
                "requests": {"PATCH nemotrondeployments/status": requests},
                "watch_events": {},
            }},
        }  # fmt: skip

    out = {
        "floor": {"10": window(1.0, 0.2, 0.5, 0.0)},
        "operator": {"10": window(3.0, 1.2, 0.6, 2.5)},
    }
    both = profile.comparison(out)["10"]
    assert both["apiserver_cpu_ms_per_deployment"] == {"floor": 100.0, "operator": 300.0}
    assert list(both["apiserver_buckets_ms_per_deployment"]) == ["watch", "apply"]
    assert both["apiserver_buckets_ms_per_deployment"]["watch"] == {
        "floor": 20.0, "operator": 120.0, "extra": 100.0,
    }  # fmt: skip
    assert both["requests_per_deployment"]["PATCH nemotrondeployments/status"]["extra"] == 2.5


@pytest.mark.parametrize(
    ("mode", "sizes", "flag", "on", "profiled"),
    [
        ("full", [100, 1000, 3000], None, True, [1000, 3000]),
        ("quick", [100, 1000], None, False, [1000]),
        ("quick", [100, 1000], True, True, [1000]),
        ("tiny", [3, 6], None, False, [6]),
    ],
)
def test_profiling_is_on_in_the_full_mode_only_unless_asked(
    mode: str, sizes: list[int], flag: bool | None, on: bool, profiled: list[int]
) -> None:
    args = argparse.Namespace(mode=mode, sizes=sizes, profile=flag, profile_sizes=None)
    profile.configure(args)
    assert (args.profile, args.profile_sizes) == (on, profiled)
