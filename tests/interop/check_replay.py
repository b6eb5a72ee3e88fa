#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Checks a replay lab run (tests/interop/lab.sh replay DDPSCOPE OUT; scenarios/replay.sh)
against live Linux peers over siw, and `ddpscope analyze` of each replay's own capture:

  1. host side vs a fresh nvmet: both queues connect, every message replayed, no difference;
  2. target side vs the kernel host: the host connected, wrote and read the namespace back as
     written, and no difference (the host's CIDs and HOSTID are its own: matched by what each
     command asks, and left out of the comparison);
  3. faults in the replayed target: the overrun Write draws siw's Terminate "DDP / Tagged Buffer
     / Base or bounds violation", reported as a DIFF of the I/O queue, and `analyze` of the
     replay's capture predicts that very Terminate at the Write (ddp.tagged.bounds) and decodes
     siw's; the Send with Invalidate of a wrong key draws no Terminate from siw 6.1 (its
     siw_invalidate_stag() looks the STag up by index and never compares the key), the kernel
     host's nvme-rdma finds it ("Bogus remote invalidation") and drops the controller, which the
     replay reports as the admin queue's commands never sent (connection ended); `analyze`
     finds ulp.invalidate-mismatch and no Terminate;
  4. NFS/RDMA client side vs the live knfsd: every call answered, READ and WRITE as captured; the
     differences are only in replies that carry file attributes (times change between runs) and
     LOOKUPs of the files the capture created (absent then, present now).

  check_replay.py DDPSCOPE DIR     (DIR: the lab run's output, or samples/siw/replay)
"""
import json
import os
import re
import subprocess
import sys

FAILS = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILS.append(what)


def report(d, name):
    with open(os.path.join(d, name + ".json")) as f:
        return json.load(f)


def analyze(ddpscope, pcap):
    r = subprocess.run([ddpscope, "analyze", pcap, "--json"], capture_output=True, text=True,
                       timeout=300)
    return json.loads(r.stdout)


def diffs(rep, stream=None):
    return [d for s in rep["streams"] if stream is None or s["stream"] == stream
            for d in s["differences"]]


def all_replayed(rep):
    return all(s["connected"] and s.get("replayed", s["messages"]) == s["messages"]
               for s in rep["streams"])


def main():
    ddpscope, d = sys.argv[1], sys.argv[2]
    # 1. Host side against a fresh nvmet.
    host = report(d, "lab-replay-nvmeof-host")
    check(len(host["streams"]) == 2 and all_replayed(host),
          "host side: admin and I/O queue connected, every message replayed")
    check(host["differences"] == 0, f"host side: no difference ({diffs(host)})")
    check(any(s["nvme_cntlid"] is not None for s in host["streams"]),
          "host side: the live controller's ID was learned and carried into the I/O Connect")
    # 2. Target side against the kernel host.
    target = report(d, "lab-replay-nvmeof-target")
    with open(os.path.join(d, "lab-replay-nvmeof-target.io")) as f:
        io = f.read()
    check("state: live" in io and "read back: same as written" in io,
          "target side: the kernel host connected, wrote, and read back what it wrote")
    check(len(target["streams"]) == 2 and all_replayed(target),
          "target side: both queues connected, every message replayed")
    check(target["differences"] == 0, f"target side: no difference ({diffs(target)})")
    # 3a. An RDMA Write 512 octets past the host's buffer.
    over = report(d, "lab-replay-nvmeof-overrun")
    bounds = "Terminate DDP / Tagged Buffer / Base or bounds violation"
    check(any(bounds in x["difference"] for x in diffs(over, 1)),
          "overrun: siw's Terminate reported as a DIFF of the I/O queue")
    found = analyze(ddpscope, os.path.join(d, "lab-replay-nvmeof-overrun.pcap"))["findings"]
    predicted = [f for f in found if f["code"] == "ddp.tagged.bounds"]
    sent = [f for f in found if f["code"] == "rdmap.terminate"]
    check(len(predicted) == 1 and predicted[0]["stream"] == 1 and
          predicted[0]["terminate"]["name"] == "DDP / Tagged Buffer / Base or bounds violation",
          "overrun: analyze finds ddp.tagged.bounds at the Write, predicting that Terminate")
    check(len(sent) == 1 and sent[0]["terminate"] == predicted[0]["terminate"] and
          f"frame {predicted[0]['frame']}" in sent[0]["message"],
          "overrun: analyze decodes siw's Terminate: the same triple, quoting that Write")
    # 3b. A Send with Invalidate of a key the host never advertised.
    inval = report(d, "lab-replay-nvmeof-invalidate")
    found = analyze(ddpscope, os.path.join(d, "lab-replay-nvmeof-invalidate.pcap"))["findings"]
    check([f["code"] for f in found] == ["ulp.invalidate-mismatch"] and found[0]["stream"] == 1,
          "invalidate: analyze finds only ulp.invalidate-mismatch, on the I/O queue "
          "(siw sends no Terminate)")
    ended = [x for x in diffs(inval, 0) if x["difference"].endswith("(connection ended)")]
    check(bool(ended), "invalidate: the kernel host dropped the controller: the admin queue's "
          "last commands never came (connection ended)")
    check(not any("Terminate" in x["difference"] for x in diffs(inval)),
          "invalidate: no Terminate from the live peer")
    dmesg = os.path.join(d, "lab-replay-nvmeof-invalidate.dmesg")
    if os.path.exists(dmesg):
        with open(dmesg) as f:
            check("Bogus remote invalidation" in f.read(),
                  "invalidate: the kernel host's nvme-rdma reported the bogus remote invalidation")
    # 4. NFS/RDMA client side against the live knfsd.
    nfs = report(d, "lab-replay-nfs-client")
    check(all_replayed(nfs), "NFS: connected, every message replayed")
    attrs = re.compile(r"NFSv3 (GETATTR|ACCESS|LOOKUP|COMMIT|SETATTR|WRITE|CREATE) xid \S+ "
                       r"\(response\)$|^RDMA Write for RPC prog 100227 ")
    unexplained = [x for x in diffs(nfs) if not attrs.search(x["expected"]) or
                   "did not send" in x["difference"] or "sent nothing" in x["difference"] or
                   x["direction"] == "extra"]
    check(not unexplained, f"NFS: differences only in replies with file attributes ({unexplained})")
    check(not any(re.search(r"NFSv3 (READ|WRITE) ", x["expected"]) and
                  "response" not in x["expected"] for x in diffs(nfs)),
          "NFS: READ data and WRITE calls as captured")
    print(f"{len(FAILS)} failed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
