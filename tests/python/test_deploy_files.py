"""The deployment recipes stay true to the code, checked without a container runtime: the Dockerfile's
sources exist in its build context and it documents the run flags gnnd needs; the Kubernetes DaemonSet
shares IPC and the socket directory with trainers and runs MPS beside gnnd; every shipped gnnd config
(the systemd example, the DaemonSet's ConfigMap) is one gnnd accepts."""
import os
import pathlib
import re
import shlex
import subprocess

import pytest

from daemon_util import GNND

REPO = pathlib.Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "deploy/container/Dockerfile"


def instructions(path):
    text = re.sub(r"\\\n", " ", path.read_text())
    return [line.split(None, 1) for line in text.splitlines() if line.strip() and not line.startswith("#")]


def test_dockerfile_copies_what_exists_and_documents_the_run_flags():
    steps = instructions(DOCKERFILE)
    assert [s[0] for s in steps].count("FROM") == 2
    for op, args in steps:
        if op == "COPY" and not args.startswith("--from"):
            *sources, _ = shlex.split(args)
            for source in sources:
                assert source == "." or (REPO / source).exists(), f"COPY {source}: not in the build context"
        if op == "RUN":
            for script in re.findall(r"deploy/[\w./-]+\.sh", args):
                assert (REPO / script).exists(), script
    assert any(op == "ENTRYPOINT" and "gnnd" in args for op, args in steps)
    header = DOCKERFILE.read_text()
    for flag in ("--ipc=host", "--ulimit memlock=-1", "--gpus", "/run/gnnd"):
        assert flag in header, flag
    ignored = (REPO / ".dockerignore").read_text().split()
    assert "build*" in ignored and ".git" in ignored


def test_daemonset_shares_ipc_and_the_socket_and_runs_mps():
    yaml = pytest.importorskip("yaml")
    documents = list(yaml.safe_load_all((REPO / "deploy/kubernetes/gnnd-daemonset.yaml").read_text()))
    daemonset = next(d for d in documents if d["kind"] == "DaemonSet")
    pod = daemonset["spec"]["template"]["spec"]
    assert pod["hostIPC"] is True
    containers = {c["name"]: c for c in pod["containers"]}
    assert set(containers) == {"gnnd", "mps"}
    assert "nvidia-cuda-mps-control -d" in " ".join(containers["mps"]["command"])
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in containers["gnnd"]["volumeMounts"]}
    config = next(d for d in documents if d["kind"] == "ConfigMap")["data"]["gnnd.textproto"]
    socket_dir = str(pathlib.Path(re.search(r'listen: "unix:([^"]+)"', config).group(1)).parent)
    assert volumes[mounts[socket_dir]]["hostPath"]["path"] == socket_dir
    assert volumes[mounts["/tmp/nvidia-mps"]]["hostPath"]["path"] == "/tmp/nvidia-mps"
    assert daemonset["spec"]["selector"]["matchLabels"] == daemonset["spec"]["template"]["metadata"]["labels"]


def test_trainer_job_runs_one_torchrun_per_node_against_that_nodes_gnnd():
    yaml = pytest.importorskip("yaml")
    daemonset = list(yaml.safe_load_all((REPO / "deploy/kubernetes/gnnd-daemonset.yaml").read_text()))
    listen = re.search(r'listen: "([^"]+)"', next(d for d in daemonset if d["kind"] == "ConfigMap")["data"]
                       ["gnnd.textproto"]).group(1)
    documents = list(yaml.safe_load_all((REPO / "deploy/kubernetes/trainer-job.yaml").read_text()))
    job, service = (next(d for d in documents if d["kind"] == kind) for kind in ("Job", "Service"))
    spec, pod = job["spec"], job["spec"]["template"]["spec"]
    nodes = spec["completions"]
    assert spec["completionMode"] == "Indexed" and spec["parallelism"] == nodes and pod["hostIPC"] is True
    anti = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert anti["topologyKey"] == "kubernetes.io/hostname"
    (trainer,) = pod["containers"]
    command = " ".join(trainer["args"])
    assert f"--nnodes {nodes} " in command and '--node-rank "$JOB_COMPLETION_INDEX"' in command
    endpoint = re.search(r"--rdzv-endpoint (\S+):(\d+)", command)
    assert "--rdzv-backend c10d" in command
    assert endpoint.group(1) == f"{job['metadata']['name']}-0.{service['metadata']['name']}"  # pod 0's DNS name
    assert pod["subdomain"] == service["metadata"]["name"] and service["spec"]["clusterIP"] == "None"
    assert int(endpoint.group(2)) in [p["port"] for p in service["spec"]["ports"]]
    env = {e["name"]: e["value"] for e in trainer["env"]}
    assert env["GNND_ADDRESS"] == listen  # the DaemonSet's gnnd on the pod's node
    mounts = {m["name"]: m["mountPath"] for m in trainer["volumeMounts"]}
    volumes = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"]}
    socket_dir = str(pathlib.Path(listen[len("unix:"):]).parent)
    assert any(volumes[name] == socket_dir == path for name, path in mounts.items())
    assert (REPO / re.search(r"(examples/\S+\.py)", command).group(1)).exists()


@pytest.mark.parametrize("source", ["systemd", "kubernetes"])
def test_shipped_configs_are_valid(tmp_path, source):
    if source == "systemd":
        text = (REPO / "deploy/systemd/gnnd.textproto").read_text()
    else:
        yaml = pytest.importorskip("yaml")
        documents = yaml.safe_load_all((REPO / "deploy/kubernetes/gnnd-daemonset.yaml").read_text())
        text = next(d for d in documents if d["kind"] == "ConfigMap")["data"]["gnnd.textproto"]
    # The paths are the production machine's: point the socket here and drop the datasets.
    text = re.sub(r"datasets \{[^}]*\}", "", text)
    # a socket of its own, so an instance of its own (tests run side by side)
    text = re.sub(r'listen: "[^"]*"', f'listen: "unix:{tmp_path}/deploy{os.getpid()}.sock"', text)
    text = re.sub(r'metrics_address: "[^"]*"', 'metrics_address: "127.0.0.1:0"', text)
    config = tmp_path / "gnnd.textproto"
    config.write_text(text)
    proc = subprocess.run([GNND, f"--config={config}", "--exit_after_load"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
