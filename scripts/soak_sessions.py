#!/usr/bin/env python3
"""The server's soak under attack: one `radstream run` serving a ZeroMQ stream (radstream simulate) and four
MRD clients at once (radstream replay --mrd, session after session, each paced by its recording's clock),
while an attacker connects every second with something hostile (a silent connection, garbage, a header
that promises 512 MiB, a stream over the memory limit, maximal noise scans, forged log lines, a JSON flood,
bytes at the ZeroMQ port). Every 10 s: the server's resident memory, open descriptors and threads. At the
end: the images the clients read against the images the server counted as sent, each client session's
images against its frames due, and memory and descriptors over time.

Writes OUT/soak-sessions-<backend>.json (samples, counts, verdicts, the commands) and a plot
OUT/soak-sessions-<backend>.svg.

  python3 scripts/soak_sessions.py SECONDS OUT [--backend cpu|cuda] [--bin build/radstream]
"""
import argparse
import json
import os
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time


def proc_stats(pid):
    try:
        status = open(f"/proc/{pid}/status").read()
        rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))
        threads = int(re.search(r"Threads:\s+(\d+)", status).group(1))
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        return rss, fds, threads
    except (OSError, AttributeError):
        return None


def xml_header(matrix, coils, samples):
    """An MRD XML header (ISMRMRD schema) of a golden-angle radial stream."""
    return ('<?xml version="1.0"?><ismrmrdHeader xmlns="http://www.ismrm.org/ISMRMRD">'
            '<experimentalConditions><H1resonanceFrequency_Hz>63500000</H1resonanceFrequency_Hz>'
            '</experimentalConditions><acquisitionSystemInformation>'
            f'<receiverChannels>{coils}</receiverChannels></acquisitionSystemInformation><encoding>'
            f'<encodedSpace><matrixSize><x>{samples}</x><y>{matrix}</y><z>1</z></matrixSize>'
            f'<fieldOfView_mm><x>{2 * 256}</x><y>256</y><z>5</z></fieldOfView_mm></encodedSpace>'
            f'<reconSpace><matrixSize><x>{matrix}</x><y>{matrix}</y><z>1</z></matrixSize>'
            '<fieldOfView_mm><x>256</x><y>256</y><z>5</z></fieldOfView_mm></reconSpace>'
            '<encodingLimits><kspace_encoding_step_1><minimum>0</minimum><maximum>65535</maximum>'
            '<center>0</center></kspace_encoding_step_1></encodingLimits>'
            '<trajectory>goldenangle</trajectory></encoding></ismrmrdHeader>')


def mrd_text(msg_id, text):
    b = text.encode() + b"\0"
    return struct.pack("<HI", msg_id, len(b)) + b


def acquisition(samples, channels, traj_dims, flags=0, body=True):
    # ISMRMRD's 340-byte AcquisitionHeader: version, flags, uid, scan counter, time stamp, 3 physio stamps,
    # number_of_samples (byte 34), available_channels, active_channels, channel mask (16 u64), discard
    # pre/post (byte 168), center_sample, encoding_space_ref, trajectory_dimensions, sample_time_us, ...
    h = bytearray(340)
    struct.pack_into("<HQ", h, 0, 1, flags)
    struct.pack_into("<HHH", h, 34, samples, channels, channels)
    struct.pack_into("<HHHHHf", h, 168, 0, 0, samples // 2, 0, traj_dims, 5.0)
    out = struct.pack("<H", 1008) + bytes(h)
    if body:
        out += bytes(4 * samples * traj_dims) + os.urandom(8 * samples * channels)
    return out


class Attacker:
    """One hostile connection a second, from 127.0.0.2, of a kind in turn; what each got is counted."""

    def __init__(self, mrd_port, zmq_port, xml_big, xml_ok, coils, samples):
        self.mrd_port, self.zmq_port = mrd_port, zmq_port
        self.xml_big, self.xml_ok = xml_big, xml_ok
        self.coils, self.samples = coils, samples
        self.counts = {}
        self.stop = threading.Event()

    def connect(self, port):
        s = socket.socket()
        s.bind(("127.0.0.2", 0))
        s.settimeout(5)
        s.connect(("127.0.0.1", port))
        return s

    def drain(self, s, seconds=5.0):
        end, got = time.time() + seconds, b""
        s.settimeout(0.5)
        while time.time() < end:
            try:
                b = s.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                break
            if not b:
                break
            got += b
        return got

    def one(self, kind):
        if kind == "silent":
            s = self.connect(self.mrd_port)
            return self.drain(s, 12)  # the header deadline ends it
        if kind == "garbage":
            s = self.connect(self.mrd_port)
            s.sendall(os.urandom(4096))
            return self.drain(s)
        if kind == "promise_512MiB":
            s = self.connect(self.mrd_port)
            s.sendall(mrd_text(3, self.xml_ok) + acquisition(65535, 1024, 3, body=False))
            return self.drain(s, 3)
        if kind == "over_memory":
            s = self.connect(self.mrd_port)
            s.sendall(mrd_text(3, self.xml_big) + struct.pack("<H", 4))
            return self.drain(s)
        if kind == "noise_flood":
            s = self.connect(self.mrd_port)
            s.sendall(mrd_text(3, self.xml_ok))
            noise = acquisition(self.samples, self.coils, 0, flags=1 << 18)
            for _ in range(200):
                s.sendall(noise)
            s.sendall(struct.pack("<H", 4))
            return self.drain(s)
        if kind == "forged_log":
            s = self.connect(self.mrd_port)
            s.sendall(struct.pack("<H", 1) + b"\x1b[2J\nFAKE LOG LINE\n".ljust(1024, b"\0"))
            s.sendall(mrd_text(5, "\x1b[31mERR forged\nFAKE LOG LINE") + mrd_text(3, self.xml_ok))
            s.sendall(struct.pack("<H", 4))
            return self.drain(s)
        if kind == "json_flood":
            s = self.connect(self.mrd_port)
            s.sendall(mrd_text(3, self.xml_ok))
            s.sendall(b"".join(mrd_text(5, '{"parameters": {"window": 8}}') for _ in range(2000)))
            return self.drain(s)
        if kind == "zmq_garbage":
            s = self.connect(self.zmq_port)
            s.sendall(os.urandom(2048))
            return self.drain(s, 2)
        raise ValueError(kind)

    def run(self):
        kinds = ["silent", "garbage", "promise_512MiB", "over_memory", "noise_flood", "forged_log", "json_flood",
                 "zmq_garbage"]
        threads, k = [], 0
        while not self.stop.is_set():
            kind = kinds[k % len(kinds)]
            k += 1

            def go(kind=kind):
                c = self.counts.setdefault(kind, {"connections": 0, "errors_heard": 0, "closed": 0, "failed": 0})
                c["connections"] += 1
                try:
                    got = self.one(kind)
                    c["errors_heard"] += got.count(b"ERR radstream")
                    if b"\x1b" in got:
                        c["escape_bytes_back"] = c.get("escape_bytes_back", 0) + 1
                    c["closed"] += 1
                except OSError:
                    c["failed"] += 1

            t = threading.Thread(target=go, daemon=True)
            t.start()
            threads.append(t)
            threads = [t for t in threads if t.is_alive()]
            self.stop.wait(1.0)
        for t in threads:
            t.join(15)


def client_loop(bin_, rec, port, config, stop, results, lock):
    while not stop.is_set():
        t0 = time.time()
        r = subprocess.run([bin_, "replay", rec, "--mrd", f"tcp://127.0.0.1:{port}", "--config", config],
                           capture_output=True, text=True)
        out = r.stdout + r.stderr
        m = re.search(r"sent (\d+) acquisitions .*?; (\d+) images back", out)
        due = re.search(r"summary: \d+ spokes, (\d+) frames due", out)
        with lock:
            results.append({"config": config, "exit": r.returncode, "seconds": round(time.time() - t0, 2),
                            "acquisitions": int(m.group(1)) if m else -1,
                            "images_back": int(m.group(2)) if m else 0,
                            "frames_due": int(due.group(1)) if due else -1,
                            "tail": "" if r.returncode == 0 else out[-400:]})


def svg(samples, title, path):
    if not samples:
        return
    W, H, L, R, T, B = 800, 400, 70, 730, 40, 350
    tm = max(s["t_s"] for s in samples) or 1
    rm = max(s["rss_kib"] for s in samples) / 1024 * 1.2 + 1
    fm = max(s["fds"] for s in samples) * 1.2 + 1
    x = lambda t: L + t / tm * (R - L)
    pts = lambda key, scale, top: " ".join(f"{x(s['t_s']):.1f},{B - s[key] / scale / top * (B - T):.1f}"
                                           for s in samples)
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
         f'<rect width="100%" height="100%" fill="white"/><text x="{L}" y="22" font-size="14">{title}</text>',
         f'<line x1="{L}" y1="{B}" x2="{R}" y2="{B}" stroke="black"/><line x1="{L}" y1="{T}" x2="{L}" y2="{B}" stroke="black"/>']
    for k in range(5):
        y = B - k * (B - T) / 4
        o.append(f'<text x="{L - 5}" y="{y + 4}" text-anchor="end" fill="#1f5fbf">{rm * k / 4:.0f}</text>'
                 f'<text x="{R + 5}" y="{y + 4}" fill="#c0392b">{fm * k / 4:.0f}</text>'
                 f'<text x="{L + k * (R - L) / 4}" y="{B + 18}" text-anchor="middle">{tm * k / 4:.0f}</text>')
    o.append(f'<text x="{(L + R) / 2}" y="{B + 38}" text-anchor="middle">time (s)</text>'
             f'<text x="10" y="{T - 8}" fill="#1f5fbf">RSS MiB</text><text x="{R}" y="{T - 8}" fill="#c0392b">fds</text>')
    o.append(f'<polyline fill="none" stroke="#1f5fbf" stroke-width="2" points="{pts("rss_kib", 1024, rm)}"/>')
    o.append(f'<polyline fill="none" stroke="#c0392b" stroke-width="2" points="{pts("fds", 1, fm)}"/>')
    o.append("</svg>")
    open(path, "w").write("\n".join(o) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("seconds", type=int)
    ap.add_argument("out")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--bin", default="build/radstream")
    ap.add_argument("--matrix", type=int, default=64)
    ap.add_argument("--coils", type=int, default=4)
    ap.add_argument("--configs", default="gridding,gridding,cg-sense,gridding")
    ap.add_argument("--session-spokes", type=int, default=2000)
    ap.add_argument("--rate", type=int, default=200, help="spokes/s of each MRD client and the ZeroMQ stream")
    ap.add_argument("--memory-limit-total", default="8G", help="the server's memory for all streams together")
    ap.add_argument("--mrd-port", type=int, default=57010)
    ap.add_argument("--zmq-port", type=int, default=57011)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    tag = f"soak-sessions-{a.backend}"
    recs = []
    for k in range(4):  # each client its own data
        rec = os.path.join(a.out, f"{tag}-client{k}.h5")
        subprocess.run([a.bin, "simulate", "--out", rec, "--spokes", str(a.session_spokes), "--matrix",
                        str(a.matrix), "--coils", str(a.coils), "--rate", str(a.rate), "--seed", str(k + 1)],
                       check=True, capture_output=True)
        recs.append(rec)
    run_cmd = [a.bin, "run", "--headless", "--backend", a.backend, "--endpoint", f"tcp://127.0.0.1:{a.zmq_port}",
               "--mrd-listen", f"tcp://127.0.0.1:{a.mrd_port}", "--mrd-max-sessions", "8", "--images", "",
               "--duration", str(a.seconds + 60), "--metrics-json", os.path.join(a.out, f"{tag}-metrics.json"),
               "--memory-limit-total", a.memory_limit_total]
    sim_cmd = [a.bin, "simulate", "--endpoint", f"tcp://127.0.0.1:{a.zmq_port}", "--rate", str(a.rate), "--matrix",
               str(a.matrix), "--coils", str(a.coils), "--pool", "1024"]
    log = open(os.path.join(a.out, f"{tag}-run.log"), "w")
    server = subprocess.Popen(run_cmd, stdout=log, stderr=subprocess.STDOUT)
    time.sleep(2)
    sim = subprocess.Popen(sim_cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    big = xml_header(1024, 64, 2048)  # a matrix of 1024 x 64 coils: past --memory-limit-total
    ok = xml_header(a.matrix, a.coils, 2 * a.matrix)
    attacker = Attacker(a.mrd_port, a.zmq_port, big, ok, a.coils, 2 * a.matrix)
    stop, lock, results = threading.Event(), threading.Lock(), []
    configs = a.configs.split(",")
    clients = [threading.Thread(target=client_loop, args=(a.bin, recs[k], a.mrd_port, configs[k % len(configs)],
                                                          stop, results, lock)) for k in range(4)]
    for c in clients:
        c.start()
    at = threading.Thread(target=attacker.run)
    at.start()
    samples, t0 = [], time.time()
    while time.time() - t0 < a.seconds and server.poll() is None:
        time.sleep(10)
        st = proc_stats(server.pid)
        if st:
            with lock:
                done = len(results)
            samples.append({"t_s": round(time.time() - t0), "rss_kib": st[0], "fds": st[1], "threads": st[2],
                            "client_sessions": done})
            print(f"soak: {samples[-1]}", flush=True)
    stop.set()
    attacker.stop.set()
    for c in clients:
        c.join(300)
    at.join(60)
    sim.send_signal(signal.SIGINT)
    sim.wait(30)
    server.send_signal(signal.SIGINT)
    rc = server.wait(60)
    metrics = json.load(open(os.path.join(a.out, f"{tag}-metrics.json")))
    mrd = metrics.get("mrd", {})
    images_back = sum(r["images_back"] for r in results)
    short = [r for r in results if r["frames_due"] >= 0 and r["images_back"] != r["frames_due"]]
    # Memory: the median of each 2-minute window (sessions that start and end make the resident memory
    # swing between samples), its growth from the first window after 6 minutes (warm-up: plans, pools,
    # the allocator's arenas) to the last.
    windows = {}
    for s in samples:
        windows.setdefault(s["t_s"] // 120, []).append(s["rss_kib"])
    medians = [sorted(v)[len(v) // 2] for _, v in sorted(windows.items())]
    settled = medians[3:] if len(medians) > 4 else medians
    growth = 100.0 * (settled[-1] - settled[0]) / settled[0] if settled else 0
    fds = [s["fds"] for s in samples]
    verdicts = {
        "server_exit_code": rc,
        "images_read_equal_images_sent": images_back == mrd.get("images_sent"),
        "every_client_session_got_every_frame": not short and all(r["exit"] == 0 for r in results),
        "rss_median_mib_per_2_min": [m // 1024 for m in medians],
        "rss_growth_percent_after_6_min": round(growth, 2),
        "fds_min_max": [min(fds), max(fds)] if fds else None,
        "attackers_never_got_escape_bytes": all("escape_bytes_back" not in c for c in attacker.counts.values()),
    }
    report = {
        "test": tag, "seconds": a.seconds, "host": socket.gethostname(), "cpus": os.cpu_count(),
        "commands": {"run": " ".join(run_cmd), "simulate": " ".join(sim_cmd),
                     "soak": " ".join(["python3", "scripts/soak_sessions.py"] + sys.argv[1:])},
        "verdicts": verdicts,
        "client_sessions": len(results), "client_images_back": images_back,
        "client_sessions_by_config": {c: {"sessions": sum(r["config"] == c for r in results),
                                          "every_frame": sum(r["config"] == c and r["exit"] == 0 and
                                                             r["images_back"] == r["frames_due"] for r in results)}
                                      for c in sorted(set(configs))},
        "client_sessions_short": short[:20], "client_sessions_failed": [r for r in results if r["exit"] != 0][:20],
        "attackers": attacker.counts,
        "server": {k: mrd.get(k) for k in ["sessions", "sessions_admitted", "sessions_completed", "sessions_failed",
                                           "sessions_refused", "busy_refused", "address_refused", "messages",
                                           "acquisitions", "noise", "texts", "images_sent", "images_dropped",
                                           "faults"]},
        "zeromq_stream": {k: metrics.get(k) for k in ["spokes", "frames", "frames_skipped", "rejected"]},
        "samples": samples,
    }
    json.dump(report, open(os.path.join(a.out, f"{tag}.json"), "w"), indent=1)
    svg(samples, f"{tag}: 4 MRD clients + a ZeroMQ stream + an attacker a second, {a.matrix}^2, {a.coils} coils",
        os.path.join(a.out, f"{tag}.svg"))
    print(json.dumps(verdicts))
    return 0 if verdicts["images_read_equal_images_sent"] and verdicts["every_client_session_got_every_frame"] else 1


if __name__ == "__main__":
    sys.exit(main())
