#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""opc.https against hostile clients: the uaplex executable with transport-https.

usage: hostile_https_test.py CASE UAPLEX PLUGIN_DIR CONFIG
  CASE: tls         TLS 1.2 offers only ECDHE with AEAD suites (static-RSA and CBC suites fail
                    the handshake), TLS 1.3 is served
        monitoring  /health and /metrics: loopback by default; 403 for a peer outside
                    monitoring_peers, while OPC UA requests are still served; a trusted client
                    certificate opens them ("optional"), an untrusted one fails the handshake
        crl         a CA-issued client certificate listed in the trusted list's CRL is refused;
                    a CRL replaced in place is reloaded: the newly revoked certificate is
                    refused and its open connection closed
        slots       100 silent sockets, then 100 idle TLS connections, from one peer (under
                    the transport's per-peer and total limits, and under a kernel connection
                    budget of 8 per peer): /health and an OPC UA request are still served, the
                    server's RSS stays bounded
        json        a large JSON request being decoded does not hold up /health on another
                    connection (the decoding is off the transport's I/O thread)
"""
import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import https_test as h  # noqa: E402  (Server, curl, Raw, check)

check = h.check


def s_client(port, args):
    """True when `openssl s_client` completes a handshake with these arguments."""
    p = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port] + args,
                       input=b"Q\n", capture_output=True, timeout=30)
    out = p.stdout.decode(errors="replace")
    # "New, TLSv1.3, Cipher is TLS_AES_128_GCM_SHA256" after a handshake, "(NONE)" without.
    new = [l for l in out.splitlines() if l.startswith("New, ")]
    return bool(new) and "(NONE)" not in new[0], out


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def get_endpoints(s):
    body = json.dumps({"TypeId": {"Id": 426}, "Body": {"RequestHeader": {"TimeoutHint": 10000},
                                                     "EndpointUrl": s.url}})
    rc, code, text = h.curl([s.url], body)
    try:
        return code == 200 and json.loads(text)["TypeId"]["Id"] == 429
    except (ValueError, KeyError, TypeError):
        return False


def case_tls(exe, plugin_dir, config, d):
    cert, key = h.openssl_cert(d, "server", "localhost")
    s = h.Server(exe, plugin_dir, config, d, 'certificate = "%s"\nprivate_key = "%s"\n' % (cert, key))
    try:
        ok, _ = s_client(s.port, ["-tls1_2", "-cipher", "AES128-SHA"])
        check(not ok, "TLS 1.2 AES128-SHA (static RSA, CBC) fails the handshake")
        ok, _ = s_client(s.port, ["-tls1_2", "-cipher", "AES128-GCM-SHA256"])
        check(not ok, "TLS 1.2 AES128-GCM-SHA256 (static RSA) fails the handshake")
        ok, _ = s_client(s.port, ["-tls1_2", "-cipher", "ECDHE-RSA-AES128-SHA"])
        check(not ok, "TLS 1.2 ECDHE-RSA-AES128-SHA (CBC) fails the handshake")
        ok, out = s_client(s.port, ["-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"])
        check(ok and "ECDHE-RSA-AES128-GCM-SHA256" in out, "TLS 1.2 ECDHE-RSA-AES128-GCM-SHA256 works")
        ok, out = s_client(s.port, ["-tls1_2"])
        check(ok and "ECDHE" in out, "TLS 1.2 with the client's default list negotiates ECDHE")
        ok, out = s_client(s.port, ["-tls1_3"])
        check(ok and "TLSv1.3" in out, "TLS 1.3 works")
        ok, _ = s_client(s.port, ["-tls1_3", "-ciphersuites", "TLS_AES_128_CCM_8_SHA256"])
        check(not ok, "TLS 1.3 with only a suite outside the list fails")
        rc, code, _ = h.curl(["https://127.0.0.1:%d/health" % s.port])
        check(code == 200 and s.alive(), "the server keeps serving")
    finally:
        s.stop()
    # A configured list that leaves no usable cipher is a configuration error.
    bad = os.path.join(d, "bad")
    os.makedirs(bad)
    try:
        s = h.Server(exe, plugin_dir, config, bad,
                     'certificate = "%s"\nprivate_key = "%s"\ntls12_ciphers = "NOTACIPHER"\n' % (cert, key))
        s.stop()
        check(False, "tls12_ciphers without a usable cipher is refused at start")
    except SystemExit:
        check(True, "tls12_ciphers without a usable cipher is refused at start")


def case_monitoring(exe, plugin_dir, config, d):
    cert, key = h.openssl_cert(d, "server", "localhost")
    base = 'certificate = "%s"\nprivate_key = "%s"\n' % (cert, key)
    s = h.Server(exe, plugin_dir, config, d, base)
    try:
        rc, code, _ = h.curl(["https://127.0.0.1:%d/health" % s.port])
        check(code == 200, "default: /health answers a loopback peer")
        rc, code, body = h.curl(["https://127.0.0.1:%d/metrics" % s.port])
        check(code == 200 and "uaplex_" in body, "default: /metrics answers a loopback peer")
        check("# TYPE uaplex_service_requests_total counter\n" in body,
              "/metrics serves the admin listener's text (docs/metrics.md)")
    finally:
        s.stop()

    # 127.0.0.1 outside the allowed peers stands in for a remote peer.
    s = h.Server(exe, plugin_dir, config, d, base + 'monitoring_peers = "10.0.0.0/8, fd00::/8"\n')
    try:
        rc, code, body = h.curl(["https://127.0.0.1:%d/metrics" % s.port])
        check(code == 403 and "uaplex_" not in body, "/metrics from a peer outside monitoring_peers is 403")
        rc, code, _ = h.curl(["https://127.0.0.1:%d/health" % s.port])
        check(code == 403, "/health from a peer outside monitoring_peers is 403")
        check(get_endpoints(s), "OPC UA requests from that peer are still served")
    finally:
        s.stop()

    # "optional": no certificate is fine for OPC UA, a trusted one opens the monitoring paths,
    # an untrusted one fails the handshake.
    trusted = os.path.join(d, "trusted")
    os.makedirs(trusted)
    good_cert, good_key = h.openssl_cert(d, "client", "monitor")
    subprocess.run(["openssl", "x509", "-in", good_cert, "-outform", "DER", "-out",
                    os.path.join(trusted, "client.der")], check=True, capture_output=True)
    bad_cert, bad_key = h.openssl_cert(d, "intruder", "monitor")
    s = h.Server(exe, plugin_dir, config, d,
                 base + 'monitoring_peers = "10.0.0.0/8"\nclient_certificates = "optional"\n'
                 'trusted = "%s"\n' % trusted)
    try:
        metrics = "https://127.0.0.1:%d/metrics" % s.port
        rc, code, body = h.curl(["--cert", good_cert, "--key", good_key, metrics])
        check(code == 200 and "uaplex_" in body, "optional: a trusted client certificate opens /metrics")
        rc, code, _ = h.curl([metrics])
        check(code == 403, "optional: without a certificate /metrics is 403")
        check(get_endpoints(s), "optional: without a certificate OPC UA requests are served")
        rc, code, _ = h.curl(["--cert", bad_cert, "--key", bad_key, metrics])
        check(rc != 0 and code == 0, "optional: an untrusted certificate fails the handshake")
    finally:
        s.stop()

    s = h.Server(exe, plugin_dir, config, d,
                 base + 'monitoring_peers = "10.0.0.0/8"\nmonitoring_client_certificates = false\n'
                 'client_certificates = "optional"\ntrusted = "%s"\n' % trusted)
    try:
        rc, code, _ = h.curl(["--cert", good_cert, "--key", good_key,
                              "https://127.0.0.1:%d/metrics" % s.port])
        check(code == 403, "monitoring_client_certificates = false: a certificate does not open /metrics")
    finally:
        s.stop()


CA_CONF = """[ ca ]
default_ca = ca_default
[ ca_default ]
database = %(d)s/index.txt
crlnumber = %(d)s/crlnumber
default_md = sha256
default_crl_days = 2
"""


def make_ca(d):
    ca_key, ca_cert = os.path.join(d, "ca.key"), os.path.join(d, "ca.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key,
                    "-out", ca_cert, "-days", "2", "-subj", "/CN=test-ca", "-addext",
                    "basicConstraints=critical,CA:TRUE", "-addext",
                    "keyUsage=critical,keyCertSign,cRLSign"], check=True, capture_output=True)
    open(os.path.join(d, "index.txt"), "w").close()
    with open(os.path.join(d, "crlnumber"), "w") as f:
        f.write("01\n")
    with open(os.path.join(d, "ca.cnf"), "w") as f:
        f.write(CA_CONF % {"d": d})
    return ca_cert, ca_key


def issue(d, ca_cert, ca_key, name, serial):
    key, csr, cert = (os.path.join(d, name + x) for x in (".key", ".csr", ".pem"))
    subprocess.run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr,
                    "-subj", "/CN=" + name], check=True, capture_output=True)
    ext = os.path.join(d, name + ".ext")
    with open(ext, "w") as f:
        f.write("extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n")
    subprocess.run(["openssl", "x509", "-req", "-in", csr, "-CA", ca_cert, "-CAkey", ca_key,
                    "-set_serial", str(serial), "-days", "2", "-out", cert, "-extfile", ext],
                   check=True, capture_output=True)
    return cert, key


def revoke_and_write_crl(d, ca_cert, ca_key, cert, out):
    cnf = os.path.join(d, "ca.cnf")
    subprocess.run(["openssl", "ca", "-config", cnf, "-keyfile", ca_key, "-cert", ca_cert,
                    "-revoke", cert], check=True, capture_output=True)
    tmp = os.path.join(d, "crl.tmp")
    subprocess.run(["openssl", "ca", "-config", cnf, "-keyfile", ca_key, "-cert", ca_cert,
                    "-gencrl", "-out", tmp], check=True, capture_output=True)
    # Rewritten in place (same name, same directory), as an operator's copy would.
    with open(tmp, "rb") as src, open(out, "wb") as dst:
        dst.write(src.read())


def case_crl(exe, plugin_dir, config, d):
    cert, key = h.openssl_cert(d, "server", "localhost")
    ca_dir = os.path.join(d, "ca")
    os.makedirs(ca_dir)
    ca_cert, ca_key = make_ca(ca_dir)
    a_cert, a_key = issue(ca_dir, ca_cert, ca_key, "client-a", 1001)
    b_cert, b_key = issue(ca_dir, ca_cert, ca_key, "client-b", 1002)
    c_cert, c_key = issue(ca_dir, ca_cert, ca_key, "client-c", 1003)
    trusted = os.path.join(d, "trusted")
    os.makedirs(trusted)
    subprocess.run(["cp", ca_cert, os.path.join(trusted, "ca.pem")], check=True)
    crl = os.path.join(trusted, "ca.crl.pem")
    revoke_and_write_crl(ca_dir, ca_cert, ca_key, b_cert, crl)
    s = h.Server(exe, plugin_dir, config, d,
                 'certificate = "%s"\nprivate_key = "%s"\nclient_certificates = "required"\n'
                 'trusted = "%s"\ntrusted_reload_interval_ms = 200\n' % (cert, key, trusted))
    try:
        health = "https://127.0.0.1:%d/health" % s.port
        rc, code, _ = h.curl(["--cert", a_cert, "--key", a_key, health])
        check(rc == 0 and code == 200, "a certificate of the trusted CA gets in")
        rc, code, _ = h.curl(["--cert", b_cert, "--key", b_key, health])
        check(rc != 0 and code == 0, "a revoked certificate (in the CRL) is refused in the handshake")

        # Open keep-alive connections with client-a and client-c, then client-a is revoked
        # too. One TLS context for client-a: a resumed session must not skip the check.
        def keep_alive(cert_file, key_file, ctx=None, session=None):
            if ctx is None:
                ctx = ssl.create_default_context()
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
                ctx.load_cert_chain(cert_file, key_file)
            conn = ctx.wrap_socket(socket.create_connection(("127.0.0.1", s.port), 10),
                                   session=session)
            conn.settimeout(15)
            conn.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            return conn, ctx, conn.recv(4096).startswith(b"HTTP/1.1 200")

        conn, a_ctx, ok = keep_alive(a_cert, a_key)
        check(ok, "client-a's keep-alive connection is served")
        a_session = conn.session
        c_conn, _, ok = keep_alive(c_cert, c_key)
        check(ok, "client-c's keep-alive connection is served")
        time.sleep(0.05)
        revoke_and_write_crl(ca_dir, ca_cert, ca_key, a_cert, crl)
        refused = False
        for _ in range(100):
            rc, code, _ = h.curl(["--cert", a_cert, "--key", a_key, health])
            if rc != 0 and code == 0:
                refused = True
                break
            time.sleep(0.1)
        check(refused, "after the CRL is replaced in place, the newly revoked certificate is refused")
        try:
            closed = conn.recv(4096) == b""
        except (OSError, ssl.SSLError):
            closed = True
        check(closed, "client-a's open connection is closed at the reload")
        conn.close()
        try:
            resumed, _, ok = keep_alive(None, None, a_ctx, a_session)
            resumed.close()
        except (OSError, ssl.SSLError):
            ok = False
        check(not ok, "client-a offering its earlier TLS session is refused (no resumption)")
        try:
            c_conn.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            ok = c_conn.recv(4096).startswith(b"HTTP/1.1 200")
        except (OSError, ssl.SSLError):
            ok = False
        check(ok, "client-c's open connection (still trusted) survives the reload")
        c_conn.close()
        rc, code, _ = h.curl(["--cert", b_cert, "--key", b_key, health])
        check(rc != 0 and code == 0 and s.alive(), "client-b stays refused, the server keeps running")
    finally:
        s.stop()


def tls_idle(port):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    c = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), 10))
    c.settimeout(10)
    c.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    if not c.recv(4096).startswith(b"HTTP/1.1 200"):  # served once, then idle on keep-alive
        c.close()
        raise OSError("not served")
    return c


def legit_served(s, what):
    t0 = time.time()
    rc, code, _ = h.curl(["https://127.0.0.1:%d/health" % s.port])
    t_health = time.time() - t0
    check(code == 200, "%s: /health is served (%.0f ms)" % (what, t_health * 1000))
    t0 = time.time()
    ok = get_endpoints(s)
    check(ok, "%s: an OPC UA request (GetEndpoints) is served (%.0f ms)" % (what, (time.time() - t0) * 1000))


def case_slots(exe, plugin_dir, config, d):
    cert, key = h.openssl_cert(d, "server", "localhost")
    with open(config) as f:
        cfg = f.read()
    # The kernel's own connection budget per peer (the leases plugin) below the transport's.
    kernel_limited = os.path.join(d, "kernel-limited.toml")
    with open(kernel_limited, "w") as f:
        f.write(cfg.replace("[plugins.leases]\n", "[plugins.leases]\nstages.connection.owner_limit = 8\n", 1))
    for base, extra, what in ((config, "", "per-peer limit (default 32)"),
                              (config, "max_connections_per_peer = 1000\n", "max_connections (100)"),
                              (kernel_limited, "", "the kernel's per-peer connection budget (8)")):
        s = h.Server(exe, plugin_dir, base, d,
                     'certificate = "%s"\nprivate_key = "%s"\n%s' % (cert, key, extra))
        try:
            before = rss_kb(s.proc.pid)
            silent = []
            for _ in range(100):
                silent.append(socket.create_connection(("127.0.0.1", s.port), 10))
            time.sleep(0.3)
            legit_served(s, "%s, 100 silent sockets held" % what)
            idle = []
            for _ in range(100):
                try:
                    idle.append(tls_idle(s.port))
                except (OSError, ssl.SSLError):
                    pass
            check(len(idle) == 100, "%s: 100 TLS connections each got served once (%d)" % (what, len(idle)))
            legit_served(s, "%s, 100 idle TLS connections held" % what)
            # The server made room by closing the longest-waiting ones.
            closed = 0
            for c in silent:
                c.setblocking(False)
                try:
                    if c.recv(1) == b"":
                        closed += 1
                except BlockingIOError:
                    pass
                except OSError:
                    closed += 1
            check(closed >= 68, "%s: the silent sockets were closed to make room (%d of 100)" % (what, closed))
            during = rss_kb(s.proc.pid)
            check(during - before < 32 * 1024,
                  "%s: server VmRSS %d -> %d kB (bounded)" % (what, before, during))
            for c in silent + idle:
                c.close()
            check(s.alive(), "%s: the server keeps running" % what)
        finally:
            s.stop()


def case_json(exe, plugin_dir, config, d):
    cert, key = h.openssl_cert(d, "server", "localhost")
    with open(config) as f:
        cfg = f.read()
    # Three large requests may wait for the decode thread at once.
    cfg = cfg.replace("[server.limits]\n", "[server.limits]\njson_decode_queue_bytes = 67108864\n", 1)
    base = os.path.join(d, "base.toml")
    with open(base, "w") as f:
        f.write(cfg)
    s = h.Server(exe, plugin_dir, base, d,
                 'certificate = "%s"\nprivate_key = "%s"\nmax_body_size = 16777216\n' % (cert, key))
    try:
        # A Read whose NodesToRead is one long array of small objects (~15 MB, linear to
        # decode), then a repeated member: the answer is a ServiceFault once all of it has
        # been decoded.
        item = b'{"NodeId":{"Id":2258},"AttributeId":13},'
        n = (15 << 20) // len(item)
        body = (b'{"TypeId":{"Id":629},"Body":{"RequestHeader":{"TimeoutHint":60000},'
                b'"NodesToRead":[' + item * n + b'{"NodeId":{"Id":2258},"AttributeId":13}],'
                b'"NodesToRead":[]}}')
        health = h.Raw(s.port)
        health.send(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        check(health.response()[0] == 200, "the /health connection is open")
        head = ("POST /UA HTTP/1.1\r\nHost: x\r\nContent-Type: application/opcua+uajson\r\n"
                "Content-Length: %d\r\n\r\n" % len(body)).encode()
        big = []
        for _ in range(3):
            b = h.Raw(s.port)
            b.sock.settimeout(120)
            # A first exchange reads the TLS 1.3 session tickets: select() below then sees
            # only the response.
            b.send(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            b.response()
            b.send(head + body[:-1])
            big.append(b)
        # Let the server read what was sent; the order of the answers below, not their
        # timing, is what is checked.
        time.sleep(1.5)
        for b in big:
            b.send(body[-1:])
        health.send(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        # Without the decode threads the I/O thread decodes the three bodies before it reads
        # the GET: /health would come last.
        import select
        order = []
        pending = {"health": health.sock, "json0": big[0].sock, "json1": big[1].sock,
                   "json2": big[2].sock}
        deadline = time.time() + 150
        while pending and time.time() < deadline:
            ready, _, _ = select.select(list(pending.values()), [], [], 1.0)
            for sock in ready:
                name = [k for k, v in pending.items() if v is sock][0]
                order.append(name)
                del pending[name]
        check(len(order) == 4 and order[-1] != "health",
              "/health is answered while the big JSON requests are decoded (%s)" % order)
        for i, b in enumerate(big):
            r = b.response()
            try:
                fault = json.loads(r[2])["TypeId"]["Id"] == h.SERVICE_FAULT
            except (ValueError, KeyError, TypeError):
                fault = False
            check(r is not None and r[0] == 200 and fault,
                  "big JSON request %d is answered (a ServiceFault)" % i)
        r = health.response()
        check(r is not None and r[0] == 200 and s.alive(), "/health is 200, the server keeps running")
        check(get_endpoints(s), "a JSON request is served afterwards")
    finally:
        s.stop()


def main():
    case, exe, plugin_dir, config = sys.argv[1:5]
    with tempfile.TemporaryDirectory() as d:
        {"tls": case_tls, "monitoring": case_monitoring, "crl": case_crl, "slots": case_slots,
         "json": case_json}[case](exe, plugin_dir, config, d)
    if h.failures:
        sys.exit("%d check(s) failed" % len(h.failures))


if __name__ == "__main__":
    main()
