"""Device proof for issue 6: our NVML readings vs nvidia-smi, the role join, the OOM and orphan findings.

Runs on the H200. Writes proof.json, proof.md, samples.jsonl, procinfo.json into --out.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from a1x_diagnostics.gpu import (  # noqa: E402
    GpuCheckOptions,
    GpuSampler,
    PynvmlBackend,
    RoleResolver,
    SampleWriter,
    assess,
    gpu_findings_now,
    samples_path,
)
from a1x_diagnostics.gpu.roles import PsutilInspector  # noqa: E402

MIB = 1 << 20
started: list[subprocess.Popen[bytes]] = []
detached_pids: list[int] = []


DRY: Any = None  # a FakeBackend standing in for NVML in a local dry run (--dry)


def smi(query: str) -> list[list[str]]:
    if DRY is not None:
        d = DRY.devices[0]
        DRY.refresh()
        if query.startswith("--query-gpu"):
            return [[str(d.memory_used // MIB), str(d.memory_total // MIB), str(d.memory_free // MIB), "0", "30", "75"]]
        return [[str(p.pid), str(p.memory_used // MIB)] for p in d.processes]
    out = subprocess.run(
        ["nvidia-smi", query, "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=30
    ).stdout
    return [[c.strip() for c in line.split(",")] for line in out.strip().splitlines() if line.strip()]


def raw_memory() -> dict[str, int]:
    if DRY is not None:
        return {}
    import pynvml as nv

    h = nv.nvmlDeviceGetHandleByIndex(0)
    v1 = nv.nvmlDeviceGetMemoryInfo(h)
    out = {"v1_used": int(v1.used), "v1_free": int(v1.free), "v1_total": int(v1.total)}
    try:
        v2 = nv.nvmlDeviceGetMemoryInfo(h, version=nv.nvmlMemory_v2)
        out.update(v2_used=int(v2.used), v2_free=int(v2.free), v2_total=int(v2.total), v2_reserved=int(v2.reserved))
    except Exception as exc:
        out["v2_error"] = str(exc)  # type: ignore[assignment]
    return out


def wait_file(path: Path, timeout: float = 120.0, step: str | None = None) -> dict[str, Any]:
    end = time.time() + timeout
    while time.time() < end:
        if path.exists():
            try:
                data = json.loads(path.read_text())
                if step is None or data.get("step") == step:
                    return data
            except ValueError:
                pass
        time.sleep(0.1)
    raise TimeoutError(f"{path} ({step})")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--dry", action="store_true", help="no GPU: fake NVML fed from the children's status files")
    args = p.parse_args()
    out = Path(args.out)
    run_dir = Path("/tmp/a1x_proof_run")
    shutil.rmtree(run_dir, ignore_errors=True)
    (run_dir / "logs_proof").mkdir(parents=True)
    result: dict[str, Any] = {"host": socket.gethostname(), "stages": [], "assessments": {}}

    import psutil

    global DRY
    backend_factory: Any = PynvmlBackend
    if args.dry:
        DRY = _dry_backend(run_dir)
        backend_factory = lambda: DRY  # noqa: E731
        import types

        pynvml: Any = types.SimpleNamespace(__version__="dry")
    else:
        import pynvml

    result["versions"] = {
        "python": sys.version.split()[0],
        "nvidia_ml_py": getattr(pynvml, "__version__", "?"),
        "psutil": psutil.__version__,
    }
    if DRY is None:
        result["nvidia_smi_L"] = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip()

    # background sampler, attach mode (roles from environment/command lines), as gpu-agent runs it
    t0 = time.perf_counter()
    writer = SampleWriter(samples_path(run_dir, "h200"), max_bytes=4 << 20)
    bg = GpuSampler(
        backend_factory(), interval_s=1.0, process_interval_s=2.0, writer=writer, host="h200", history_size=3600
    )
    ok = bg.open()
    result["lazy_init_s"] = round(time.perf_counter() - t0, 4)
    if not ok:
        result["unavailable"] = bg.unavailable
        (out / "proof.json").write_text(json.dumps(result, indent=2))
        print("UNAVAILABLE", bg.unavailable)
        return 1
    result["driver"] = bg.state.driver
    result["devices"] = [d.to_json() for d in bg.state.devices]
    bg.start()
    now_sampler = GpuSampler(backend_factory(), host="h200", history_size=4)
    now_sampler.open()

    alloc_status = run_dir / "alloc.json"

    def stage(name: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        t = time.perf_counter()
        snap = now_sampler.sample(processes=True)
        took = time.perf_counter() - t
        assert snap is not None
        gpu = smi("--query-gpu=memory.used,memory.total,memory.free,utilization.gpu,temperature.gpu,power.draw")[0]
        apps = smi("--query-compute-apps=pid,used_memory")
        dev = snap.devices[0]
        ours_procs = {
            p.pid: {
                "mib": None if not isinstance(p.memory_used, int) else p.memory_used // MIB,
                "bytes": p.memory_used if isinstance(p.memory_used, int) else None,
                "role": p.role.label if p.role else None,
                "kind": p.role.kind.value if p.role else None,
                "source": p.role.source if p.role else None,
                "detail": p.role.detail if p.role else None,
            }
            for p in snap.processes or ()
        }
        rec = {
            "stage": name,
            "sample_s": round(took, 4),
            "ours": {
                "used_mib": dev.memory_used // MIB if isinstance(dev.memory_used, int) else None,
                "total_mib": dev.memory_total // MIB if isinstance(dev.memory_total, int) else None,
                "free_mib": dev.memory_free // MIB if isinstance(dev.memory_free, int) else None,
                "used_bytes": dev.memory_used,
                "util": dev.gpu_utilization if isinstance(dev.gpu_utilization, int) else None,
                "temp": dev.temperature if isinstance(dev.temperature, int) else None,
                "power_mw": dev.power_usage if isinstance(dev.power_usage, int) else None,
                "processes": ours_procs,
            },
            "nvidia_smi": {
                "used_mib": int(gpu[0]),
                "total_mib": int(gpu[1]),
                "free_mib": int(gpu[2]),
                "util": gpu[3],
                "temp": gpu[4],
                "power_w": gpu[5],
                "apps": {int(a[0]): int(a[1]) for a in apps if len(a) == 2 and a[0].isdigit() and a[1].isdigit()},
                "apps_raw": apps,
            },
            "raw_nvml": raw_memory(),
            "visible_in_proc": {pid: psutil.pid_exists(pid) for pid in ours_procs},
            "role_note": now_sampler.state.role_note,
        }
        if alloc_status.exists():
            rec["allocator"] = json.loads(alloc_status.read_text())
        if extra:
            rec.update(extra)
        result["stages"].append(rec)
        ours_text = ", ".join(f"{k}: {v['mib']} {v['role']}" for k, v in ours_procs.items())
        print(f"[stage {name}] ours used {rec['ours']['used_mib']} MiB, smi {rec['nvidia_smi']['used_mib']} MiB; "
              f"procs ours {{{ours_text}}} smi {rec['nvidia_smi']['apps']}", flush=True)
        return rec

    try:
        stage("baseline")
        base_env = {k: v for k, v in os.environ.items() if not k.startswith(("COSMOS_", "LOCAL_RANK", "RANK"))}
        pypath = f"{HERE / 'fakecosmos'}:{os.environ.get('PYTHONPATH', '')}"
        # 1) a process not part of any run: plain python holding 8 GiB
        orphan = subprocess.Popen(
            [sys.executable, str(HERE / "holder.py"), "--gib", "8", "--status", str(run_dir / "orphan.json")],
            env=base_env,
            stdout=subprocess.DEVNULL,
        )
        started.append(orphan)
        # 2) a Cosmos-RL rollout left from a killed run: COSMOS_ROLE=Rollout, reparented (its shell exits)
        leftover_env = dict(base_env, PYTHONPATH=pypath, COSMOS_ROLE="Rollout", CUDA_VISIBLE_DEVICES="0",
                            LOCAL_RANK="0", RANK="0", COSMOS_CONTROLLER_HOST="localhost:8001")
        subprocess.run(
            ["setsid", "sh", "-c",
             f"{sys.executable} -m cosmos_rl.rollout.rollout_entry --gib 4 --status {run_dir / 'leftover.json'} "
             f"> {run_dir / 'logs_proof' / 'rollout_0.log'} 2>&1 &"],
            env=leftover_env, check=True,
        )
        # 3) this run's policy replica: COSMOS_ROLE=Policy, stdout to logs_proof/policy_0.log
        policy_env = dict(base_env, PYTHONPATH=pypath, COSMOS_ROLE="Policy", CUDA_VISIBLE_DEVICES="0",
                          LOCAL_RANK="0", RANK="0", COSMOS_CONTROLLER_HOST="localhost:8000")
        log = open(run_dir / "logs_proof" / "policy_0.log", "wb")  # noqa: SIM115
        alloc = subprocess.Popen(
            [sys.executable, "-m", "cosmos_rl.policy.train", "--config", "/tmp/a1x_proof_run/proof.toml",
             "--status", str(alloc_status)],
            env=policy_env, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
        )
        started.append(alloc)
        wait_file(alloc_status, step="ready")
        wait_file(run_dir / "orphan.json")
        leftover_state = wait_file(run_dir / "leftover.json")
        detached_pids.append(int(leftover_state["pid"]))
        result["pids"] = {"policy": alloc.pid, "orphan": orphan.pid, "leftover": leftover_state["pid"],
                          "leftover_ppid_at_start": leftover_state["ppid"],
                          "leftover_ppid_now": psutil.Process(leftover_state["pid"]).ppid()}
        t_policy_ready = time.time()
        stage("processes_started")

        def command(cmd: str, step: str) -> dict[str, Any]:
            assert alloc.stdin is not None
            alloc.stdin.write((cmd + "\n").encode())
            alloc.stdin.flush()
            return wait_file(alloc_status, step=step)

        command("alloc 20", "alloc20")
        stage("alloc_20GiB")
        command("alloc 60", "alloc60")
        s80 = stage("alloc_80GiB")

        # proc info fixture for CPU tests (only the ENV_KEYS subset is ever read)
        insp = PsutilInspector()
        procinfo: dict[str, Any] = {}
        for pid in list(s80["ours"]["processes"]):
            chain = []
            cur = insp.info(pid)
            while cur is not None and len(chain) < 8:
                chain.append({"pid": cur.pid, "ppid": cur.ppid, "cmdline": list(cur.cmdline),
                              "environ": dict(cur.environ), "user": cur.user, "stdout": cur.stdout})
                if cur.ppid is None or cur.ppid <= 1:
                    break
                cur = insp.info(cur.ppid)
            procinfo[str(pid)] = chain
        (out / "procinfo.json").write_text(json.dumps(procinfo, indent=1))

        opts = GpuCheckOptions(gpu_memory_utilization=0.8, rollout_started=False, rollout_gpus=[0], idle_after_s=20)
        # wait until the policy GPU has been idle >= 25 s in the background history
        while time.time() - t_policy_ready < 27:
            time.sleep(0.5)
        hist = bg.history_list()
        attached = assess(hist, options=opts, role_note=bg.state.role_note)
        supervised_join = RoleResolver({alloc.pid: "policy_0"}).join(s80["ours"]["processes"].keys())
        supervised = assess(hist, roles=supervised_join.roles, options=opts)
        t = time.perf_counter()
        now = gpu_findings_now(run_dir=run_dir, options=opts, backend=backend_factory())
        now_s = time.perf_counter() - t
        for name, a in (("attached", attached), ("supervised", supervised), ("gpu_findings_now", now)):
            result["assessments"][name] = {
                "findings": [f.model_dump(mode="json") for f in a.findings],
                "checks": [c.model_dump(mode="json") for c in a.checks],
                "notes": a.notes,
            }
        result["assessments"]["gpu_findings_now"]["wall_s"] = round(now_s, 4)
        result["supervised_roles"] = {str(k): v.to_json() for k, v in supervised_join.roles.items()}

        oom = command("oom", "oom")
        stage("after_oom_attempt", {"oom": oom})
        command("free", "freed")
        stage("freed")

        # the gpu_orphan action, run as a user would
        orphan_f = next(f for f in attached.findings if f.id == "gpu_orphan")
        kill_cmd = (orphan_f.action or "").split("#")[0].strip()
        result["orphan_action"] = orphan_f.action
        subprocess.run(kill_cmd, shell=True, check=False)
        t = time.time()
        gone = False
        while time.time() - t < 15:
            for proc in started:
                proc.poll()  # reap our own child, as its real parent would
            snap = now_sampler.sample(processes=True)
            pids = {p.pid for p in ((snap.processes or ()) if snap is not None else ())}
            if not pids & set(orphan_f.data["pids"]):
                gone = True
                break
            time.sleep(0.5)
        result["orphans_gone_after_s"] = round(time.time() - t, 2) if gone else None
        stage("orphans_killed")
        after = gpu_findings_now(options=opts, backend=backend_factory())
        result["assessments"]["after_kill"] = {
            "findings": [f.id for f in after.findings],
            "checks": [c.model_dump(mode="json") for c in after.checks],
        }
        assert alloc.stdin is not None
        alloc.stdin.write(b"exit\n")
        alloc.stdin.flush()
        alloc.wait(30)
        time.sleep(2.5)
        stage("end")
    finally:
        bg.stop()
        writer.write_event("stop", host="h200")
        for proc in started:
            if proc.poll() is None:
                proc.kill()
        for pid in detached_pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.copy(samples_path(run_dir, "h200"), out / "samples.jsonl")
        (out / "proof.json").write_text(json.dumps(result, indent=2, default=str))
        (out / "proof.md").write_text(markdown(result))
    return 0


def _dry_backend(run_dir: Path) -> Any:
    from a1x_diagnostics.gpu.backend import ProcessReading
    from a1x_diagnostics.gpu.fake import FakeBackend, FakeDevice

    class Dry(FakeBackend):
        def refresh(self) -> None:
            import psutil

            procs = []
            for name in ("alloc.json", "orphan.json", "leftover.json"):
                f = run_dir / name
                if not f.exists():
                    continue
                st = json.loads(f.read_text())
                if not psutil.pid_exists(st["pid"]):
                    continue
                used = st.get("gib", 0) << 30 if "gib" in st else st.get("torch_reserved", 0)
                procs.append(ProcessReading(st["pid"], used + (500 << 20)))
            d = self.devices[0]
            d.processes = procs
            d.memory_used = sum(p.memory_used for p in procs) + (600 << 20)  # type: ignore[misc]

        def processes(self, index: int) -> list[ProcessReading]:
            self.refresh()
            return super().processes(index)

        def memory(self, index: int) -> Any:
            self.refresh()
            return super().memory(index)

    return Dry([FakeDevice(uuid="GPU-dry")])


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"# GPU proof on {result.get('nvidia_smi_L', '?')}",
        "",
        f"driver {result.get('driver')}, lazy NVML init {result.get('lazy_init_s')} s, pids {result.get('pids')}",
        "",
        "| stage | ours used MiB | smi used MiB | ours total | smi total "
        "| per-process ours MiB (role) | smi apps MiB |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in result["stages"]:
        procs = "; ".join(f"{pid}: {v['mib']} ({v['role']})" for pid, v in s["ours"]["processes"].items())
        apps = "; ".join(f"{pid}: {m}" for pid, m in s["nvidia_smi"]["apps"].items())
        lines.append(
            f"| {s['stage']} | {s['ours']['used_mib']} | {s['nvidia_smi']['used_mib']} | {s['ours']['total_mib']} | "
            f"{s['nvidia_smi']['total_mib']} | {procs} | {apps} |"
        )
    for name, a in result["assessments"].items():
        lines += ["", f"## {name}", ""]
        for f in a.get("findings", []):
            if isinstance(f, dict):
                lines.append(f"- **{f['id']}** ({f['severity']}): {f['explanation']}")
                for e in f["evidence"]:
                    lines.append(f"  - `{e['file']}:{e['line']}` {e['text']}")
                if f.get("action"):
                    lines.append(f"  - action: `{f['action']}`")
                for fx in f.get("fixes", []):
                    lines.append(f"  - fix: {fx['path']} {fx['current']} -> {fx['proposed']}")
            else:
                lines.append(f"- {f}")
        for c in a.get("checks", []):
            lines.append(f"- check {c['id']}: {c['state']} {c.get('note') or ''}")
        for n in a.get("notes", []):
            lines.append(f"- note: {n}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
