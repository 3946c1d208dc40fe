"""What hostile peers can do to a job that has the agent: its speed, its memory,
its stderr, and whether a real viewer still gets in.

A simulated job (``aclmon run --sim``) listens on loopback TCP with a token (the
listener an attacker on the network would find, kept on 127.0.0.1 here) and
prints its iteration count every 0.1 s. Rounds alternate between quiet and
under attack (the order flips every round); each figure is the median of the
per-round results. The attack, from this process, every round:

* 64 connections that send nothing (reopened when the job closes them);
* 64 connections that send garbage (reopened when closed);
* a slowloris: 16 connections sending their hello one byte every 0.2 s;
* a command flood: connections that complete the handshake without the token
  (receive-only) and send Ping frames as fast as the job takes them, never
  reading what the job sends.

During each attacked round a viewer that has the token connects and must
receive events.

Figures (last line, JSON):

* ``job_rate_ratio``: job iterations/s under attack / quiet (target >= 0.9).
  On a busy shared machine this swings with everyone else's load, so also:
* ``job_cpu_ratio``: job iterations per CPU-second of the job process (all its
  threads: what serving the attackers costs it) under attack / quiet;
* ``job_rss_growth_mb``: the job's RSS at the end minus before the first
  attack (target < 16);
* ``real_viewer_connected``: the viewer with the token got in and received
  events in every attacked round (must be true);
* ``stderr_lines``: lines the job wrote to stderr after its start-up line
  (target < 100);
* ``attack_connections``: connections the attack opened in all (for scale).

Traffic goes only to 127.0.0.1; connection counts and every round's duration
are bounded. The attacking process lowers its own priority (nice 19) after
starting the job: on a small shared machine its own CPU use would otherwise
slow the job down by competing for the cores, which measures the machine, not
what the job's defences cost it.

usage: python bench/bench_hostile.py [--rounds N] [--seconds S]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import msgpack
import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from aclmon import events as ev  # noqa: E402
from aclmon.bus import handshake  # noqa: E402
from aclmon.bus.subscriber import Subscriber  # noqa: E402
from aclmon.events.wire import FrameDecoder, encode_frame  # noqa: E402

JOB = """\
import sys, time
import acl

acl.init()
acl.rt.set_device(0)
context, _ = acl.rt.create_context(0)
stream, _ = acl.rt.create_stream()
n = 0
next_report = time.monotonic()
while True:
    acl.rt.synchronize_stream(stream)
    n += 1
    now = time.monotonic()
    if now >= next_report:
        print(f"{now:.6f} {n}", flush=True)
        next_report = now + 0.1
"""

IDLE = 64
GARBAGE = 64
SLOWLORIS = 16
FLOODERS = 4
CONNECT_TIMEOUT = 2.0


class Job:
    def __init__(self, directory: Path, token: str) -> None:
        script = directory / "job.py"
        script.write_text(JOB)
        self.stderr_path = directory / "stderr.txt"
        port = _free_port()
        self.address = f"tcp://127.0.0.1:{port}"
        env = dict(
            os.environ,
            PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
            ACLMON_TOKEN=token,  # never on a command line
        )
        with open(self.stderr_path, "w") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "aclmon.agent", "--sim", "--listen", self.address,
                 "--interval", "0.2", str(script)],
                stdout=subprocess.PIPE, stderr=stderr, env=env, text=True,
            )  # fmt: skip
        self.samples: list[tuple[float, int]] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + 30
        while not self.samples:
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise SystemExit(f"the job did not start: {self.stderr_path.read_text()}")
            time.sleep(0.05)

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            when, count = line.split()
            with self._lock:
                self.samples.append((float(when), int(count)))

    def rate(self, start: float, end: float) -> float:
        """Iterations per second between the samples nearest ``start`` and ``end``."""
        with self._lock:
            inside = [s for s in self.samples if start <= s[0] <= end]
        if len(inside) < 2:
            return 0.0
        (t0, n0), (t1, n1) = inside[0], inside[-1]
        return (n1 - n0) / (t1 - t0)

    def cpu_s(self) -> float:
        times = psutil.Process(self.process.pid).cpu_times()
        return float(times.user + times.system)

    def count(self) -> int:
        with self._lock:
            return self.samples[-1][1]

    def rss_mb(self) -> float:
        return psutil.Process(self.process.pid).memory_info().rss / 2**20

    def stderr_lines(self) -> int:
        lines = self.stderr_path.read_text(errors="replace").splitlines()
        return sum(1 for line in lines if not line.startswith("aclmon agent: listening"))

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Attack:
    """The attackers of one round, on threads, until ``stop()``."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.stopping = threading.Event()
        self.opened = 0
        self._lock = threading.Lock()
        self.threads = [
            threading.Thread(target=self._idle, daemon=True),
            threading.Thread(target=self._garbage, daemon=True),
            threading.Thread(target=self._slowloris, daemon=True),
            *(threading.Thread(target=self._flood, daemon=True) for _ in range(FLOODERS)),
        ]

    def start(self) -> Attack:
        for thread in self.threads:
            thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(10)

    def _connect(self) -> socket.socket | None:
        try:
            sock = socket.create_connection(self.target, CONNECT_TIMEOUT)
        except OSError:
            self.stopping.wait(0.05)
            return None
        with self._lock:
            self.opened += 1
        return sock

    @staticmethod
    def _alive(sock: socket.socket) -> bool:
        """Still open (what the job sent is read and thrown away)."""
        try:
            data = sock.recv(65536, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return True
        except OSError:
            return False
        return bool(data)

    def _keep(self, count: int, send: bytes | None, period: float) -> None:
        socks: list[socket.socket] = []
        while not self.stopping.is_set():
            socks = [s for s in socks if self._alive(s) or s.close()]
            while len(socks) < count and not self.stopping.is_set():
                sock = self._connect()
                if sock is None:
                    break
                socks.append(sock)
            if send is not None:
                for sock in socks:
                    try:
                        sock.sendall(send)
                    except OSError:
                        sock.close()
            self.stopping.wait(period)
        for sock in socks:
            sock.close()

    def _idle(self) -> None:
        self._keep(IDLE, None, 0.2)

    def _garbage(self) -> None:
        self._keep(GARBAGE, os.urandom(512), 0.05)

    def _slowloris(self) -> None:
        # A hello that never ends: a 4 KiB length prefix, then one byte at a time.
        socks: list[tuple[socket.socket, int]] = []
        while not self.stopping.is_set():
            kept = []
            for sock, sent in socks:
                try:
                    sock.sendall(b"\x00\x10\x00\x00"[sent : sent + 1] if sent < 4 else b"a")
                    kept.append((sock, sent + 1))
                except OSError:
                    sock.close()
            socks = kept
            while len(socks) < SLOWLORIS and not self.stopping.is_set():
                sock = self._connect()
                if sock is None:
                    break
                socks.append((sock, 0))
            self.stopping.wait(0.2)
        for sock, _ in socks:
            sock.close()

    def _flood(self) -> None:
        ping = encode_frame(ev.encode(ev.Ping(1, 1, 1)))
        burst = ping * 2000
        while not self.stopping.is_set():
            sock = self._connect()
            if sock is None:
                continue
            try:
                sock.settimeout(CONNECT_TIMEOUT)
                frames = FrameDecoder()
                payloads: list[bytes] = []
                while len(payloads) < 1:
                    data = sock.recv(4096)
                    if not data:
                        raise OSError("closed")
                    payloads += frames.feed(data)
                hello = msgpack.unpackb(payloads[0])
                answer = handshake.client_hello(hello, None, False)
                sock.sendall(encode_frame(msgpack.packb(answer)))
                sock.settimeout(0.5)
                while not self.stopping.is_set():
                    sock.sendall(burst)
            except (OSError, ValueError):
                pass
            finally:
                sock.close()


def _viewer_gets_in(address: str, token: str) -> bool:
    with Subscriber(address, token=token, readonly=True, connect_timeout=2.0) as viewer:
        if not viewer.wait_connected(5.0):
            print(f"  viewer could not connect: {viewer.state} {viewer.state_reason}")
            return False
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            if viewer.poll(1000, 0.1):
                return True
    return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4, help="rounds of each kind (default 4)")
    parser.add_argument("--seconds", type=float, default=3.0, help="one round (default 3 s)")
    args = parser.parse_args()

    token = secrets.token_hex(16)
    with tempfile.TemporaryDirectory(prefix="aclmon-bench-hostile-") as tmp:
        job = Job(Path(tmp), token)
        os.nice(19)
        try:
            host, port = job.address.removeprefix("tcp://").rsplit(":", 1)
            time.sleep(1.0)  # past start-up
            rss_before = job.rss_mb()
            quiet: list[float] = []
            attacked: list[float] = []
            quiet_cpu: list[float] = []
            attacked_cpu: list[float] = []
            viewer_ok = True
            opened = 0
            for round_no in range(args.rounds * 2):
                under_attack = (round_no % 2 == 0) == (round_no // 2 % 2 == 0)
                attack = Attack(host, int(port)).start() if under_attack else None
                if attack is not None:
                    time.sleep(0.5)  # the attack in full swing before measuring
                start = time.monotonic()
                cpu0, count0 = job.cpu_s(), job.count()
                if attack is not None:
                    viewer_ok &= _viewer_gets_in(job.address, token)
                remaining = args.seconds - (time.monotonic() - start)
                if remaining > 0:
                    time.sleep(remaining)
                end = time.monotonic()
                time.sleep(0.15)  # the job's next report covers the end
                per_cpu = (job.count() - count0) / max(job.cpu_s() - cpu0, 1e-9)
                rate = job.rate(start, end)
                if attack is not None:
                    attack.stop()
                    opened += attack.opened
                    attacked.append(rate)
                    attacked_cpu.append(per_cpu)
                else:
                    quiet.append(rate)
                    quiet_cpu.append(per_cpu)
                kind = "attack" if attack is not None else "quiet "
                print(f"round {round_no + 1}: {kind} {rate:10.0f} iterations/s"
                      f" {per_cpu:10.0f} per CPU-s  rss {job.rss_mb():6.1f} MiB")  # fmt: skip
                time.sleep(0.5)  # let the job close what is left
            rss_growth = job.rss_mb() - rss_before
            stderr_lines = job.stderr_lines()
        finally:
            job.stop()
    ratio = statistics.median(attacked) / statistics.median(quiet) if min(quiet) > 0 else 0.0
    cpu_ratio = statistics.median(attacked_cpu) / statistics.median(quiet_cpu)
    figures = {
        "job_rate_ratio": round(ratio, 3),
        "job_cpu_ratio": round(cpu_ratio, 3),
        "job_rss_growth_mb": round(rss_growth, 1),
        "real_viewer_connected": viewer_ok,
        "stderr_lines": stderr_lines,
        "attack_connections": opened,
        "quiet_rate": round(statistics.median(quiet)),
        "attacked_rate": round(statistics.median(attacked)),
    }
    print(f"job rate under attack / quiet: {ratio:.3f} (target >= 0.9)")
    print(f"job iterations per CPU-second under attack / quiet: {cpu_ratio:.3f}")
    print(f"job RSS growth: {rss_growth:.1f} MiB (target < 16)")
    print(f"viewer with the token got in every attacked round: {viewer_ok}")
    print(f"job stderr lines: {stderr_lines} (target < 100)")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
