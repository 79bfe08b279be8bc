"""docker-py (Debian's python3-docker) against a hutch daemon.

Usage: dockerpy_check.py BASE_URL IMAGE REGISTRY API_VERSION
IMAGE is a pullable busybox on REGISTRY; API_VERSION is "auto" or a
version such as 1.41. Prints "ok <name>" per check, exits 1 on the first
failure with what went wrong.
"""
import io
import sys
import tarfile
import time

import docker

base_url, image, registry, version = sys.argv[1:5]
c = docker.DockerClient(base_url=base_url, version=version)
api = c.api
step = "connect"


def check(name, cond, got):
    if not cond:
        sys.exit("FAIL %s: got %r" % (name, got))
    print("ok", name)


try:
    step = "pull"
    img = c.images.pull(image)
    check("pull", image in img.tags, img.tags)

    step = "build"
    df = b"FROM %s\nRUN echo built > /built\nVOLUME /vol\nCMD [\"cat\", \"/built\"]\n" % image.encode()
    out = list(api.build(fileobj=io.BytesIO(df), tag="pytest/built:1", rm=True, decode=True))
    check("build stream", any("Successfully tagged pytest/built:1" in o.get("stream", "") for o in out), out[-3:])
    built, _ = c.images.build(fileobj=io.BytesIO(df), tag="pytest/built:1", rm=True)
    check("build", "pytest/built:1" in built.tags, built.tags)
    ii = api.inspect_image("pytest/built:1")
    if version != "auto":
        cc = ii.get("ContainerConfig") or {}
        check("inspect ContainerConfig", "/vol" in (cc.get("Volumes") or {}), ii.keys())
    try:
        c.images.build(fileobj=io.BytesIO(b"FROM %s\nRUN exit 3\n" % image.encode()), rm=True)
        check("build failure", False, "no error")
    except docker.errors.BuildError as e:
        check("build failure", "returned a non-zero code: 3" in str(e), str(e))

    step = "tag/push/remove"
    pushed = "%s/pytest/pushed" % registry
    check("tag", built.tag(pushed, "v1"), None)
    last = list(c.images.push(pushed, tag="v1", stream=True, decode=True))[-1]
    check("push", "Digest" in last.get("aux", {}), last)
    c.images.remove(pushed + ":v1")
    check("remove", pushed + ":v1" not in c.images.get("pytest/built:1").tags, None)

    step = "run"
    check("run attached", c.containers.run("pytest/built:1", remove=True) == b"built\n", None)
    try:
        c.containers.run(image, ["sh", "-c", "echo boom >&2; exit 4"], remove=True)
        check("run failure", False, "no error")
    except docker.errors.ContainerError as e:
        check("run failure", e.exit_status == 4 and b"boom" in e.stderr, (e.exit_status, e.stderr))

    step = "detached container"
    ctr = c.containers.run(image, ["sh", "-c", "i=0; while true; do echo line$i; i=$((i+1)); sleep 0.1; done"],
                           detach=True, name="pytest-ctr", labels={"pytest": "1"})
    logs = ctr.logs(stream=True, follow=True)
    got = [next(logs) for _ in range(3)]
    logs.close()
    check("logs follow", got == [b"line0\n", b"line1\n", b"line2\n"], got)
    r = ctr.exec_run(["sh", "-c", "echo o; echo e >&2; exit 2"], demux=True)
    check("exec demux", r.exit_code == 2 and r.output == (b"o\n", b"e\n"), r)
    r = ctr.exec_run(["sh", "-c", "echo a; echo b"], stream=True)
    check("exec stream", b"".join(r.output) == b"a\nb\n", None)
    tarbuf = io.BytesIO()
    with tarfile.open(fileobj=tarbuf, mode="w") as t:
        ti = tarfile.TarInfo("put.txt")
        ti.size = 4
        t.addfile(ti, io.BytesIO(b"tar\n"))
    check("put_archive", ctr.put_archive("/", tarbuf.getvalue()), None)
    strm, stat = ctr.get_archive("/put.txt")
    data = tarfile.open(fileobj=io.BytesIO(b"".join(strm))).extractfile("put.txt").read()
    check("get_archive", data == b"tar\n" and stat["size"] == 4, (data, stat))
    s = ctr.stats(stream=False)
    check("stats", "memory_stats" in s and "cpu_stats" in s, s.keys())
    check("top", len(ctr.top()["Processes"]) >= 1, None)
    ctr.rename("pytest-renamed")
    ctr.reload()
    check("rename", ctr.name == "pytest-renamed", ctr.name)
    ctr.update(restart_policy={"Name": "on-failure", "MaximumRetryCount": 2})
    ctr.reload()
    check("update", ctr.attrs["HostConfig"]["RestartPolicy"]["Name"] == "on-failure", ctr.attrs["HostConfig"]["RestartPolicy"])
    ctr.restart(timeout=1)
    ctr.reload()
    check("restart", ctr.status == "running", ctr.status)
    check("list filters", [x.name for x in c.containers.list(filters={"label": "pytest=1"})] == ["pytest-renamed"], None)
    ctr.kill()
    check("wait", ctr.wait(timeout=30)["StatusCode"] == 137, None)
    ctr.remove()

    step = "networks"
    net = c.networks.create("pytest-net", labels={"pytest": "1"})
    peer = c.containers.run(image, ["sleep", "60"], detach=True)
    net.connect(peer, aliases=["peer-alias"])
    out = c.containers.run(image, ["sh", "-c", "ping -c1 -W5 peer-alias >/dev/null && echo reached"], network="pytest-net", remove=True)
    check("network alias", out == b"reached\n", out)
    net.disconnect(peer, force=True)
    peer.reload()
    check("disconnect", "pytest-net" not in peer.attrs["NetworkSettings"]["Networks"], None)
    peer.remove(force=True)
    check("network prune", "pytest-net" in (c.networks.prune(filters={"label": "pytest=1"})["NetworksDeleted"] or []), None)

    step = "volumes"
    vol = c.volumes.create("pytest-vol", labels={"pytest": "1"})
    out = c.containers.run(image, ["sh", "-c", "echo v > /v/f; cat /v/f"], volumes={"pytest-vol": {"bind": "/v", "mode": "rw"}}, remove=True)
    check("volume mount", out == b"v\n", out)
    check("volume list", [v.name for v in c.volumes.list(filters={"label": "pytest=1"})] == ["pytest-vol"], None)
    vol.remove()
    check("volume remove", not c.volumes.list(filters={"label": "pytest=1"}), None)

    step = "events"
    since = time.time() - 1
    x = c.containers.run(image, ["true"], detach=True, name="pytest-ev")
    x.wait()
    x.remove()
    evs = list(c.events(since=since, until=time.time() + 1, decode=True, filters={"container": "pytest-ev"}))
    check("events", [e["Action"] for e in evs] == ["create", "start", "die", "destroy"], evs)
except docker.errors.APIError as e:
    sys.exit("FAIL %s: %s" % (step, e))
