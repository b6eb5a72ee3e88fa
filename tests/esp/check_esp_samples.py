#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The IPsec samples (samples/ipsec/NAME.json: a scenario with an `esp` block) against the real
CLI, the issue's acceptance:
  - with its keys, each sample analyses as the same exchange in the clear (the scenario without
    its `esp` block): same streams, segment and message counts, findings (esp.* aside); plus the
    per-stream ipsec summary (protected, mode, SPI pair, algorithms);
  - the xfrm file gives the same analysis as the esp_sa table (where both can say the SAs);
  - without keys: esp.unknown-spi once per SPI with its frame count, and a line saying what to
    pass; wrong keys: esp.icv-mismatch on every ESP frame, nothing else (no garbage streams);
  - a bad SA file is a usage error naming its line.
Usage: check_esp_samples.py path/to/ddpscope samples/ipsec"""
import copy
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def analyze(binary, pcap, args=()):
    p = subprocess.run([binary, "analyze", "--json", pcap, *args], capture_output=True, text=True)
    if p.returncode not in (0, 1):
        raise SystemExit(f"FAIL: ddpscope exited {p.returncode} on {pcap} {args}: {p.stderr}")
    return json.loads(p.stdout), p.stderr


def strip(v, frames):
    """A report part without its ipsec summary (and, when ESP packets were added, frame numbers)."""
    if isinstance(v, dict):
        return {k: strip(x, frames) for k, x in v.items()
                if k != "ipsec" and not (frames and ("frame" in k or k == "origin"))}
    if isinstance(v, list):
        return [strip(x, frames) for x in v]
    return v


def findings(report, frames):
    out = [(f["code"], f["severity"]) + (() if frames else (f["frame"],))
           for f in report["findings"] if not f["code"].startswith("esp.")]
    return sorted(out)


def main():
    binary, here = sys.argv[1], sys.argv[2]
    scenarios = sorted(p for p in glob.glob(os.path.join(here, "*.json"))
                       if not p.endswith((".expected.json", ".golden.json")))
    check(len(scenarios) >= 6, f"only {len(scenarios)} IPsec samples")
    with tempfile.TemporaryDirectory() as tmp:
        for path in scenarios:
            name = os.path.basename(path)[:-5]
            scen = json.load(open(path))
            exp = json.load(open(os.path.join(here, name + ".expected.json")))
            esp = scen["esp"]
            pcap = os.path.join(here, name + ".pcap")
            # The keys (also for a sample whose expected.json withholds them: keys_given false).
            keys = ["--esp-sa", os.path.join(here, name + ".esp_sa")]
            if exp.get("xfrm_file") or esp.get("esn") or esp.get("replay_window", 64) != 64:
                keys = ["--xfrm", os.path.join(here, name + ".xfrm")]
            policy = (["--require-esp"] if exp.get("require_esp") else []) + \
                (["--esp-policy", exp["esp_policy"]] if exp.get("esp_policy") else [])

            clear_scen = copy.deepcopy(scen)
            del clear_scen["esp"]
            # A receiver_drop is a packet its receiver dropped (ICV) and got again by TCP's
            # retransmission: in the clear, the segment once.
            dropped = [f for f in clear_scen.get("tcp_faults", []) if f["kind"] == "receiver_drop"]
            clear_scen["tcp_faults"] = [f for f in clear_scen.get("tcp_faults", [])
                                        if f["kind"] != "receiver_drop"]
            clear_json = os.path.join(tmp, name + "-clear.json")
            json.dump(clear_scen, open(clear_json, "w"))
            clear_pcap = os.path.join(tmp, name + "-clear.pcap")
            subprocess.run([binary, "synth", clear_json, "-o", clear_pcap], check=True,
                           capture_output=True)
            clear, _ = analyze(binary, clear_pcap)
            got, _ = analyze(binary, pcap, keys + policy)

            # The same exchange: streams, counts, findings.
            shifted = bool(esp.get("faults")) or bool(dropped)
            check(strip(got["streams"], shifted) == strip(clear["streams"], shifted),
                  f"{name}: streams differ from the exchange in the clear")
            check(findings(got, shifted) == findings(clear, shifted),
                  f"{name}: findings {findings(got, shifted)} vs in the clear {findings(clear, shifted)}")
            check(got["summary"]["messages"] == clear["summary"]["messages"],
                  f"{name}: message count differs")
            esp_codes = sorted((f["code"], f["frame"]) for f in got["findings"]
                               if f["code"].startswith("esp."))
            want_codes = sorted((e["code"], e["frame"]) for e in exp["expected"]
                                if e["code"].startswith("esp.") and e["code"] != "esp.unknown-spi")
            check(esp_codes == want_codes, f"{name}: esp findings {esp_codes}, expected {want_codes}")

            # The ipsec summary of each stream.
            protected = set(esp.get("connections", range(len(scen["connections"]))))
            spis = esp.get("spi", ["0x00001001", "0x00002001"])
            spis = [s if isinstance(s, str) else "0x%08x" % s for s in spis]
            for i, s in enumerate(got["streams"]):
                ip = s.get("ipsec")
                if not check(ip is not None, f"{name}: stream {i} has no ipsec summary"):
                    continue
                if i in protected:
                    check(ip["protected"] and ip["mode"] == esp.get("mode", "tunnel"),
                          f"{name}: stream {i} ipsec {ip}")
                    check(int(ip["spi"]["client_to_server"], 16) == int(spis[0], 16) and
                          int(ip["spi"]["server_to_client"], 16) == int(spis[1], 16),
                          f"{name}: stream {i} SPIs {ip['spi']}")
                    check(ip["esn"] == esp.get("esn", False) and
                          ip["udp_encap"] == esp.get("udp_encap", False),
                          f"{name}: stream {i} esn/udp {ip}")
                    cipher = esp.get("encryption", "aes-gcm-16").upper().replace("3DES", "3DES")
                    check(ip["encryption"].upper().startswith(cipher.split("-1")[0][:5]),
                          f"{name}: stream {i} encryption {ip['encryption']} for {cipher}")
                else:
                    check(ip == {"protected": False}, f"{name}: stream {i} ipsec {ip}")

            # The xfrm file says the same as the esp_sa table.
            if keys[0] == "--esp-sa":
                via_xfrm, _ = analyze(binary, pcap,
                                      ["--xfrm", os.path.join(here, name + ".xfrm")] + policy)
                # Messages name the SA's file and line: compared without them.
                def no_msg(r):
                    return [{k: v for k, v in f.items() if k != "message"} for f in r["findings"]]
                check(no_msg(via_xfrm) == no_msg(got) and via_xfrm["streams"] == got["streams"],
                      f"{name}: --xfrm and --esp-sa analyses differ")

            # Without keys: esp.unknown-spi once per SPI, what to pass.
            bare, err = analyze(binary, pcap, policy)
            unknown = [f for f in bare["findings"] if f["code"] == "esp.unknown-spi"]
            n_sas = sum(1 for line in open(os.path.join(here, name + ".esp_sa"))
                        if line.startswith('"'))
            check(len(unknown) == n_sas, f"{name}: {len(unknown)} esp.unknown-spi for {n_sas} SAs")
            check(len({f["message"].split()[1] for f in unknown}) == len(unknown),
                  f"{name}: esp.unknown-spi repeated for one SPI")
            esp_frames = sum(int(f["message"].split("no key; ")[1].split()[0]) for f in unknown)
            check(esp_frames > 0 and all("--esp-sa" in f["message"] for f in unknown),
                  f"{name}: unknown-spi messages {[f['message'] for f in unknown]}")
            check("--esp-sa" in err and "--xfrm" in err, f"{name}: no hint on stderr: {err!r}")
            check(len(bare["streams"]) == len(scen["connections"]) - len(protected),
                  f"{name}: without keys {len(bare['streams'])} streams")

            # Wrong keys: an ICV mismatch at every ESP frame, never a garbage analysis.
            if esp.get("integrity", "null") != "null" or esp.get("encryption", "aes-gcm-16").startswith("aes-gcm"):
                src = keys[1]
                text = open(src).read()
                # Flip one hex digit of every key (encryption and integrity).
                flipped = re.sub(r"0x[0-9a-f]{20,}",
                                 lambda m: m.group(0)[:-1] + ("1" if m.group(0)[-1] != "1" else "2"),
                                 text)
                bad = os.path.join(tmp, name + "-wrong" + os.path.splitext(src)[1])
                open(bad, "w").write(flipped)
                opt = keys[0]
                wrong, _ = analyze(binary, pcap, [opt, bad])
                codes = {f["code"] for f in wrong["findings"]}
                icv = [f for f in wrong["findings"] if f["code"] == "esp.icv-mismatch"]
                check(codes <= {"esp.icv-mismatch", "esp.profile-violation"} and
                      len(icv) == esp_frames,
                      f"{name}: wrong keys gave {sorted(codes)}, {len(icv)} ICV mismatches for "
                      f"{esp_frames} ESP frames")
                check(len(wrong["streams"]) == len(scen["connections"]) - len(protected),
                      f"{name}: wrong keys left {len(wrong['streams'])} streams")

        # Every transform, both modes, both families, ESN and UDP encapsulation: generated from
        # clean-rping's exchange, analysed with the generator's SA file, equal to the clear one.
        base = json.load(open(os.path.join(here, "esp-gcm128-tunnel.json")))
        clear_base = copy.deepcopy(base)
        del clear_base["esp"]
        matrix = [
            ("aes-gcm-16", 256, "null", "tunnel", {}),
            ("aes-gcm-12", 128, "null", "transport", {}),
            ("aes-gcm-8", 192, "null", "tunnel", {"esn": True, "first_seq": "0x1fffffffe"}),
            ("aes-ctr", 128, "hmac-sha1-96", "transport", {"udp_encap": True}),
            ("aes-ctr", 256, "hmac-sha512-256", "tunnel", {"esn": True}),
            ("aes-cbc", 192, "hmac-sha384-192", "transport", {"v6": True}),
            ("aes-cbc", 128, "hmac-sha256-96", "tunnel", {"udp_encap": True, "v6": True}),
            ("des-cbc", 64, "hmac-md5-96", "transport", {}),
            ("3des-cbc", 192, "hmac-sha256-128", "transport", {"esn": True, "udp_encap": True}),
            ("null", 0, "hmac-sha1-96", "tunnel", {}),
        ]
        for enc, bits, integ, mode, extra in matrix:
            tag = f"{enc}-{bits}-{integ}-{mode}-" + "-".join(sorted(extra))
            scen = copy.deepcopy(base)
            clear_scen = copy.deepcopy(clear_base)
            if extra.pop("v6", False):
                for sc in (scen, clear_scen):
                    sc["connections"][0]["client"]["ip"] = "2001:db8::1"
                    sc["connections"][0]["server"]["ip"] = "2001:db8::2"
            scen["esp"] = {"mode": mode, "encryption": enc, "integrity": integ, **extra}
            if bits:
                scen["esp"]["key_bits"] = bits
            paths = {}
            for kind, sc in (("esp", scen), ("clear", clear_scen)):
                j = os.path.join(tmp, f"m-{kind}.json")
                json.dump(sc, open(j, "w"))
                paths[kind] = os.path.join(tmp, f"m-{kind}.pcap")
                r = subprocess.run([binary, "synth", j, "-o", paths[kind]], capture_output=True,
                                   text=True)
                check(r.returncode == 0, f"matrix {tag}: synth {kind}: {r.stderr}")
            exp = json.load(open(os.path.join(tmp, "m-esp.expected.json")))
            opt = ["--xfrm", os.path.join(tmp, "m-esp.xfrm")] if exp.get("xfrm_file") else \
                ["--esp-sa", os.path.join(tmp, "m-esp.esp_sa")]
            got, _ = analyze(binary, paths["esp"], opt)
            clear, _ = analyze(binary, paths["clear"])
            check(len(clear["streams"]) == 1 and
                  strip(got["streams"], False) == strip(clear["streams"], False),
                  f"matrix {tag}: streams differ from the clear exchange")
            esp_codes = sorted((f["code"], f["frame"]) for f in got["findings"]
                               if f["code"].startswith("esp."))
            want = sorted((e["code"], e["frame"]) for e in exp["expected"])
            check(esp_codes == want and findings(got, False) == findings(clear, False),
                  f"matrix {tag}: findings {esp_codes} expected {want}")
            ip = got["streams"][0].get("ipsec", {}) if got["streams"] else {}
            check(ip.get("protected") and ip.get("mode") == mode and
                  ip.get("esn") == extra.get("esn", False) and
                  ip.get("udp_encap") == extra.get("udp_encap", False),
                  f"matrix {tag}: ipsec summary {ip}")

        # Issue 39: a packet altered on the wire in a capture whose ACKs cover it anyway (a
        # duplicate, then the original's ICV flipped in place: the capture holds a bad packet, a
        # later segment, an ACK past both, and TCP's retransmission three packets later).
        # Nothing is missing: the retransmission is used, counts as in the clear, no tcp.gap.
        base = json.load(open(os.path.join(here, "esp-icv-retransmit.json")))
        dup = copy.deepcopy(base)
        dup["tcp_faults"] = [dict(f, kind="duplicate", after=3) for f in dup["tcp_faults"]]
        clear_scen = copy.deepcopy(base)
        del clear_scen["esp"], clear_scen["tcp_faults"]
        paths = {}
        for kind, sc in (("dup", dup), ("clear", clear_scen)):
            j = os.path.join(tmp, f"icv-{kind}.json")
            json.dump(sc, open(j, "w"))
            paths[kind] = os.path.join(tmp, f"icv-{kind}.pcap")
            subprocess.run([binary, "synth", j, "-o", paths[kind]], check=True, capture_output=True)
        data = open(paths["dup"], "rb").read()
        records, at = [], 24
        while at < len(data):
            n = int.from_bytes(data[at + 8:at + 12], "little")
            records.append(bytearray(data[at:at + 16 + n]))
            at += 16 + n
        bad = 13  # the second Read Response segment (esp-icv-retransmit's receiver_drop)
        records[bad - 1][-1] ^= 0x01
        flipped = os.path.join(tmp, "icv-flipped.pcap")
        open(flipped, "wb").write(data[:24] + b"".join(records))
        clear, _ = analyze(binary, paths["clear"])
        for threads in ("1", "2"):  # the ESP layer's note reaches the engine on either path
            got, _ = analyze(binary, flipped, ["--esp-sa", os.path.join(tmp, "icv-dup.esp_sa"),
                                               "--threads", threads])
            codes = [(f["code"], f["frame"]) for f in got["findings"]]
            check(codes == [("esp.icv-mismatch", bad)],
                  f"ICV failure with covering ACKs, {threads} thread(s): findings {codes}")
            check(strip(got["streams"], True) == strip(clear["streams"], True),
                  f"ICV failure with covering ACKs, {threads} thread(s): streams differ from the "
                  f"clear exchange ({got['streams'][0]['directions'][0]} vs "
                  f"{clear['streams'][0]['directions'][0]})")

        # ip -s xfrm state as iproute2 prints it (lifetime, stats, anti-replay lines included).
        keys = re.findall(r'"(0x[0-9a-f]{40})"', open(os.path.join(here, "esp-gcm128-tunnel.esp_sa")).read())
        real = ""
        for (src, dst, spi), key in zip((("192.0.2.1", "192.0.2.2", "0x00001001"),
                                         ("192.0.2.2", "192.0.2.1", "0x00002001")), keys):
            real += (f"src {src} dst {dst}\n\tproto esp spi {spi} reqid 1 mode tunnel\n"
                     "\treplay-window 0 seq 0x00000000 flag af-unspec (0x00100000)\n"
                     f"\taead rfc4106(gcm(aes)) {key} (160 bits) 128\n"
                     "\tanti-replay context: seq 0x0, oseq 0x21, bitmap 0x00000000\n"
                     "\tlifetime config:\n\t  limit: soft (INF)(bytes), hard (INF)(bytes)\n"
                     "\t  limit: soft (INF)(packets), hard (INF)(packets)\n"
                     "\t  expire add: soft 0(sec), hard 0(sec)\n\t  expire use: soft 0(sec), hard 0(sec)\n"
                     "\tlifetime current:\n\t  20480(bytes), 33(packets)\n"
                     "\t  add 2026-12-02 10:00:00 use 2026-12-02 10:00:01\n"
                     "\tstats:\n\t  replay-window 0 replay 0 failed 0\n"
                     "\tsel src 0.0.0.0/0 dst 0.0.0.0/0 uid 0\n")
        rx = os.path.join(tmp, "real.xfrm")
        open(rx, "w").write(real)
        sample = os.path.join(here, "esp-gcm128-tunnel.pcap")
        a, _ = analyze(binary, sample, ["--xfrm", rx])
        b, _ = analyze(binary, sample, ["--esp-sa", os.path.join(here, "esp-gcm128-tunnel.esp_sa")])
        check(a["streams"] == b["streams"] and len(a["streams"]) == 1,
              "ip -s xfrm state output with lifetime and stats lines: not the esp_sa analysis")

        # Wireshark's address forms: "*", "a.b.*.*" and prefixes "a.b.c.0/24" match.
        text = open(os.path.join(here, "esp-gcm128-tunnel.esp_sa")).read()
        for src, dst in (("*", "*"), ("192.0.*.*", "192.0.2.0/24"), ("192.0.2.0/30", "*")):
            wild = text.replace('"192.0.2.1","192.0.2.2"', f'"{src}","{dst}"') \
                       .replace('"192.0.2.2","192.0.2.1"', f'"{src}","{dst}"')
            wf = os.path.join(tmp, "wild.esp_sa")
            open(wf, "w").write(wild)
            w, _ = analyze(binary, sample, ["--esp-sa", wf])
            check(w["streams"] == b["streams"], f"esp_sa addresses {src} {dst}: not decrypted")
        miss = text.replace('"192.0.2.1","192.0.2.2"', '"192.0.3.1","192.0.2.2"')
        open(wf, "w").write(miss)
        w, _ = analyze(binary, sample, ["--esp-sa", wf])
        check([f["code"] for f in w["findings"]] == ["esp.unknown-spi"],
              f"an SA of another source address still matched: {w['findings']}")

        # The two-thread pipeline (the ESP layer on the analysis thread) gives the same report.
        faults = os.path.join(here, "esp-faults.pcap")
        xf = ["--xfrm", os.path.join(here, "esp-faults.xfrm")]
        one, _ = analyze(binary, faults, xf + ["--threads", "1"])
        two, _ = analyze(binary, faults, xf + ["--threads", "2"])
        check(one == two, "esp-faults: --threads 1 and 2 reports differ")

        # A bad SA file is a usage error naming its line.
        good = open(os.path.join(here, "esp-gcm128-tunnel.esp_sa")).read().splitlines()
        bad = os.path.join(tmp, "bad.esp_sa")
        open(bad, "w").write("\n".join(good[:2] + ['"IPv4","192.0.2.2","*","0x2001","AES-GCM with 16 octet ICV [RFC4106]","0x1234","NULL",""']) + "\n")
        p = subprocess.run([binary, "analyze", os.path.join(here, "esp-gcm128-tunnel.pcap"),
                            "--esp-sa", bad], capture_output=True, text=True)
        check(p.returncode == 2 and f"{bad}:3:" in p.stderr and "encryption key" in p.stderr,
              f"bad esp_sa: exit {p.returncode}, {p.stderr!r}")
        badx = os.path.join(tmp, "bad.xfrm")
        open(badx, "w").write("src 192.0.2.1 dst 192.0.2.2\n\tproto esp spi 0x1001 reqid 1 mode tunnel\n"
                              "\taead rfc4106(gcm(aes)) 0xzz (160 bits) 128\n")
        p = subprocess.run([binary, "analyze", os.path.join(here, "esp-gcm128-tunnel.pcap"),
                            "--xfrm", badx], capture_output=True, text=True)
        check(p.returncode == 2 and f"{badx}:3:" in p.stderr,
              f"bad xfrm: exit {p.returncode}, {p.stderr!r}")
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print(f"ok: {len(scenarios)} IPsec samples")
    return 0


if __name__ == "__main__":
    sys.exit(main())
