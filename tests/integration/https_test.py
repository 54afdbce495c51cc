#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""opc.https end to end: the uaplex executable with transport-https, driven by curl with JSON
bodies and by the binary-over-HTTPS client.

usage: https_test.py CASE UAPLEX PLUGIN_DIR CONFIG [BINARY_CLIENT]
  CASE: json        curl: health, metrics, GetEndpoints, CreateSession, ActivateSession, Read,
                    Write, Browse, Call; malformed JSON is a ServiceFault; 413 past max_body_size
        binary      the binary client's session (https_binary_client)
        http        hostile HTTP: oversized head, bad lines and lengths, chunked, 413 before the
                    body, keep-alive and pipelining, max_requests_per_connection, max_connections
                    (the longest-idle connection makes room)
        clientcert  client_certificates = "required": a trusted certificate gets in, an
                    untrusted one and none are refused in the TLS handshake
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

BAD_DECODING_ERROR = 0x80070000
BAD_ENCODING_LIMITS_EXCEEDED = 0x80080000
SERVICE_FAULT = 395  # DataType id of ServiceFault


def free_port():
    # Below the kernel's ephemeral range (32768 and up): a client socket of a test running in
    # parallel cannot take it between this pick and the server's listen.
    import random
    for _ in range(200):
        port = random.randrange(20000, 28000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 20000-27999")


def openssl_cert(d, name, cn):
    key, cert = os.path.join(d, name + ".key"), os.path.join(d, name + ".pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                    "-out", cert, "-days", "2", "-subj", "/CN=" + cn, "-addext",
                    "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key


class Server:
    def __init__(self, exe, plugin_dir, base_config, d, extra):
        self.tcp, self.port = free_port(), free_port()
        self.url = "https://127.0.0.1:%d/UA" % self.port
        with open(base_config) as f:
            cfg = f.read()
        cfg = cfg.replace('plugin_dirs = ["{exe_dir}/../plugins"]', 'plugin_dirs = ["%s"]' % plugin_dir)
        cfg = cfg.replace('endpoints = ["opc.tcp://0.0.0.0:4840"]',
                          'endpoints = ["opc.tcp://127.0.0.1:%d", "opc.https://127.0.0.1:%d/UA"]'
                          % (self.tcp, self.port))
        # The admin listener on a free port of the kernel's choice (tests run in parallel).
        cfg = cfg.replace('listen = "127.0.0.1:4841"', 'listen = "127.0.0.1:0"')
        # The clients write and call as Anonymous: granted explicitly (the built-in defaults
        # give Anonymous no Write or Call).
        cfg += '\n[access]\nanonymous_permissions = ["All"]\n'
        cfg += "\n[plugins.transport-https]\nenabled = true\n" + extra
        path = os.path.join(d, "uaplex-%d.toml" % self.port)
        with open(path, "w") as f:
            f.write(cfg)
        self.log = open(os.path.join(d, "server-%d.log" % self.port), "w+")
        self.proc = subprocess.Popen([exe, "--config", path], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        self.log.seek(0)
        sys.exit("server did not start:\n" + self.log.read())

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()


failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def curl(args, data=None, ctype="application/opcua+uajson"):
    cmd = ["curl", "-sk", "--max-time", "20", "-o", "-", "-w", "\n%{http_code}"] + args
    if data is not None:
        cmd += ["-X", "POST", "-H", "Content-Type: " + ctype, "--data-binary", "@-"]
    p = subprocess.run(cmd, input=data.encode() if isinstance(data, str) else data,
                       capture_output=True)
    out = p.stdout.decode(errors="replace")
    body, _, code = out.rpartition("\n")
    return p.returncode, int(code or 0), body


def ua(server, type_id, body):
    rc, code, text = curl([server.url], json.dumps({"TypeId": {"Id": type_id}, "Body": body}))
    try:
        return code, json.loads(text)
    except ValueError:
        return code, None


def header(token=None):
    h = {"TimeoutHint": 10000}
    if token is not None:
        h["AuthenticationToken"] = token
    return h


def case_json(exe, plugin_dir, config, d):
    cert, key = openssl_cert(d, "server", "localhost")
    s = Server(exe, plugin_dir, config, d,
               'certificate = "%s"\nprivate_key = "%s"\nmax_body_size = 65536\n' % (cert, key))
    try:
        rc, code, body = curl(["https://127.0.0.1:%d/health" % s.port])
        check(code == 200 and json.loads(body) == {"status": "ok"}, "GET /health is 200 {\"status\":\"ok\"}")
        rc, code, body = curl(["https://127.0.0.1:%d/metrics" % s.port])
        check(code == 200 and "\nuaplex_connections " in body,
              "GET /metrics is Prometheus text with the server's metrics")

        code, r = ua(s, 426, {"RequestHeader": header(), "EndpointUrl": "opc.https://127.0.0.1:%d/UA" % s.port})
        eps = (r or {}).get("Body", {}).get("Endpoints", [])
        https = [e for e in eps if e.get("TransportProfileUri", "").endswith("https-uabinary")]
        check(code == 200 and r["TypeId"]["Id"] == 429 and len(https) == 1 and
              https[0]["EndpointUrl"].startswith("opc.https://") and
              https[0]["SecurityPolicyUri"].endswith("#None") and https[0]["SecurityMode"] == 1,
              "GetEndpoints lists the https endpoint (SecurityPolicy None, mode None)")

        code, r = ua(s, 459, {"RequestHeader": header(), "EndpointUrl": s.url,
                              "ClientDescription": {"ApplicationUri": "urn:curl", "ApplicationType": 1},
                              "SessionName": "curl", "RequestedSessionTimeout": 60000})
        token = (r or {}).get("Body", {}).get("AuthenticationToken")
        check(code == 200 and r["TypeId"]["Id"] == 462 and token is not None, "CreateSession")

        code, r = ua(s, 465, {"RequestHeader": header(token),
                              "UserIdentityToken": {"TypeId": {"Id": 319}, "Body": {"PolicyId": "anonymous"}}})
        check(code == 200 and r["TypeId"]["Id"] == 468 and
              r["Body"]["ResponseHeader"].get("ServiceResult", 0) == 0, "ActivateSession")

        code, r = ua(s, 629, {"RequestHeader": header(token), "TimestampsToReturn": 3,
                              "NodesToRead": [{"NodeId": {"Id": 2255}, "AttributeId": 13}]})
        uris = r["Body"]["Results"][0]["Value"]["Body"] if r else []
        demo = uris.index("urn:uaplex:demo") if "urn:uaplex:demo" in uris else 0
        check(code == 200 and demo > 0, "Read NamespaceArray")
        node = {"IdType": 1, "Id": "Demo.Scalars.Int64", "Namespace": demo}

        code, r = ua(s, 671, {"RequestHeader": header(token), "NodesToWrite": [
            {"NodeId": node, "AttributeId": 13, "Value": {"Value": {"Type": 8, "Body": "-9007199254740993"}}}]})
        check(code == 200 and r["TypeId"]["Id"] == 674 and r["Body"]["Results"] == [0],
              "Write an Int64 beyond 2^53 (a JSON string)")
        code, r = ua(s, 629, {"RequestHeader": header(token), "TimestampsToReturn": 3,
                              "NodesToRead": [{"NodeId": node, "AttributeId": 13}]})
        check(code == 200 and r["Body"]["Results"][0]["Value"] == {"Type": 8, "Body": "-9007199254740993"},
              "Read it back exactly")

        code, r = ua(s, 525, {"RequestHeader": header(token), "NodesToBrowse": [
            {"NodeId": {"IdType": 1, "Id": "Demo", "Namespace": demo}, "BrowseDirection": 0,
             "ReferenceTypeId": {"Id": 33}, "IncludeSubtypes": True, "ResultMask": 63}]})
        names = [x["BrowseName"]["Name"] for x in r["Body"]["Results"][0].get("References", [])] if r else []
        check(code == 200 and r["TypeId"]["Id"] == 528 and "Multiply" in names, "Browse Demo")

        code, r = ua(s, 710, {"RequestHeader": header(token), "MethodsToCall": [
            {"ObjectId": {"IdType": 1, "Id": "Demo", "Namespace": demo},
             "MethodId": {"IdType": 1, "Id": "Demo.Multiply", "Namespace": demo},
             "InputArguments": [{"Type": 11, "Body": 3}, {"Type": 11, "Body": 4}]}]})
        res = r["Body"]["Results"][0] if r else {}
        check(code == 200 and r["TypeId"]["Id"] == 713 and res.get("StatusCode", 0) == 0 and
              res.get("OutputArguments") == [{"Type": 11, "Body": 12}], "Call Demo.Multiply(3, 4) = 12")

        for bad in ['{"TypeId":{"Id":629},"Body":{"NodesToRead":[{"NodeId":{"Id":"x"}}]}}',
                    '{"TypeId":{"Id":629},"Body":', '[1,2,3]', '{"TypeId":{"Id":999999},"Body":{}}',
                    '\x00\xff' * 10, '{"a":' * 1000]:
            rc, code, text = curl([s.url], bad)
            try:
                r = json.loads(text)
            except ValueError:
                r = None
            check(code == 200 and r is not None and r["TypeId"]["Id"] == SERVICE_FAULT and
                  r["Body"]["ResponseHeader"]["ServiceResult"] in (BAD_DECODING_ERROR, BAD_ENCODING_LIMITS_EXCEEDED),
                  "malformed JSON %r...: HTTP 200, ServiceFault with a Bad status" % bad[:24])
        rc, code, _ = curl([s.url], "x" * (4 << 20))  # still sending when the 413 is written
        check(code == 413, "a body past max_body_size is 413")
        rc, code, _ = curl([s.url], "{}", ctype="text/plain")
        check(code == 415, "another Content-Type is 415")
        rc, code, _ = curl(["https://127.0.0.1:%d/nothing" % s.port])
        check(code == 404, "GET of another path is 404")
        code, r = ua(s, 629, {"RequestHeader": header(token), "NodesToRead": [{"NodeId": {"Id": 2258}, "AttributeId": 13}]})
        check(code == 200 and r["TypeId"]["Id"] == 632 and s.alive(), "the server keeps serving")
        code, r = ua(s, 471, {"RequestHeader": header(token), "DeleteSubscriptions": True})
        check(code == 200 and r["TypeId"]["Id"] == 474, "CloseSession")
    finally:
        s.stop()


def case_binary(exe, plugin_dir, config, d, client):
    # The server certificate as the PKI store keeps it (DER, from `uaplex pki create-cert`).
    out = os.path.join(d, "own")
    subprocess.run([exe, "pki", "--pki", os.path.join(d, "pki"), "create-cert", "--uri",
                    "urn:uaplex:https-test", "--out-dir", out], check=True, capture_output=True)
    cert, key = os.path.join(out, "cert.der"), os.path.join(out, "key.pem")
    s = Server(exe, plugin_dir, config, d, 'certificate = "%s"\nprivate_key = "%s"\n' % (cert, key))
    try:
        p = subprocess.run([client, str(s.port)], capture_output=True, timeout=60)
        sys.stdout.write(p.stdout.decode())
        check(p.returncode == 0, "the binary-over-HTTPS client's session")
        check(s.alive(), "the server keeps running")
    finally:
        s.stop()


def case_clientcert(exe, plugin_dir, config, d):
    cert, key = openssl_cert(d, "server", "localhost")
    trusted_dir = os.path.join(d, "trusted")
    os.makedirs(trusted_dir)
    good_cert, good_key = openssl_cert(d, "client", "trusted-client")
    # Trusted as the PKI store keeps certificates: DER files in trusted/certs.
    subprocess.run(["openssl", "x509", "-in", good_cert, "-outform", "DER", "-out",
                    os.path.join(trusted_dir, "client.der")], check=True, capture_output=True)
    bad_cert, bad_key = openssl_cert(d, "intruder", "trusted-client")
    s = Server(exe, plugin_dir, config, d,
               'certificate = "%s"\nprivate_key = "%s"\nclient_certificates = "required"\ntrusted = "%s"\n'
               % (cert, key, trusted_dir))
    try:
        health = "https://127.0.0.1:%d/health" % s.port
        rc, code, _ = curl(["--cert", good_cert, "--key", good_key, health])
        check(rc == 0 and code == 200, "a trusted client certificate gets in")
        rc, code, _ = curl(["--cert", bad_cert, "--key", bad_key, health])
        check(rc != 0 and code == 0, "an untrusted client certificate is refused in the handshake")
        rc, code, _ = curl([health])
        check(rc != 0 and code == 0, "no client certificate is refused")
        rc, code, _ = curl(["--cert", good_cert, "--key", good_key, health])
        check(rc == 0 and code == 200 and s.alive(), "the server keeps serving")
    finally:
        s.stop()


class Raw:
    """One TLS connection speaking raw HTTP, for inputs curl would not send."""

    def __init__(self, port):
        import ssl
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        self.sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), 10))
        self.sock.settimeout(10)
        self.buf = b""

    def send(self, data):
        self.sock.sendall(data)

    def response(self):
        """(status, headers text, body), or None when the server closed the connection."""
        try:
            while b"\r\n\r\n" not in self.buf:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return None
                self.buf += chunk
            head, _, rest = self.buf.partition(b"\r\n\r\n")
            text = head.decode()
            length = 0
            for line in text.split("\r\n")[1:]:
                if line.lower().startswith("content-length:"):
                    length = int(line.split(":")[1])
            while len(rest) < length:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return None
                rest += chunk
            self.buf = rest[length:]
            return int(text.split(" ")[1]), text, rest[:length]
        except (OSError, ValueError):
            return None

    def closed(self):
        try:
            return self.sock.recv(1) == b""
        except OSError:
            return True

    def close(self):
        self.sock.close()


def case_http(exe, plugin_dir, config, d):
    cert, key = openssl_cert(d, "server", "localhost")
    s = Server(exe, plugin_dir, config, d,
               'certificate = "%s"\nprivate_key = "%s"\nmax_body_size = 65536\n'
               'max_connections = 3\nmax_requests_per_connection = 3\n' % (cert, key))
    get = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
    try:
        c = Raw(s.port)
        c.send(get + get)  # pipelined: answered in order
        r1, r2 = c.response(), c.response()
        check(r1 and r1[0] == 200 and r2 and r2[0] == 200 and "close" not in r2[1].lower(),
              "keep-alive: two requests on one connection")
        c.send(get)
        r3 = c.response()
        check(r3 and r3[0] == 200 and "Connection: close" in r3[1] and c.closed(),
              "max_requests_per_connection: the last response closes the connection")
        c.close()

        rc, code, _ = curl(["--tlsv1.0", "--tls-max", "1.1", "https://127.0.0.1:%d/health" % s.port])
        check(rc != 0 and code == 0, "TLS 1.1 is refused")
        rc, code, _ = curl(["--tlsv1.3", "https://127.0.0.1:%d/health" % s.port])
        check(rc == 0 and code == 200, "TLS 1.3 is served")

        cases = [
            (b"GET /health HTTP/1.1\r\nX: " + b"a" * 20000 + b"\r\n\r\n", 431, "a head over 16 KiB is 431"),
            (b"GARBAGE\r\n\r\n", 400, "a malformed request line is 400"),
            (b"POST /UA HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", 400,
             "conflicting Content-Length is 400"),
            (b"POST /UA HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, "a negative Content-Length is 400"),
            (b"POST /UA HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411, "a chunked body is 411"),
            (b"POST /UA HTTP/1.1\r\nContent-Type: application/octet-stream\r\n"
             b"Content-Length: 99999999999\r\n\r\n", 413, "a huge Content-Length is 413 before any body"),
            (b"DELETE /UA HTTP/1.1\r\n\r\n", 405, "another method is 405"),
        ]
        for data, status, what in cases:
            c = Raw(s.port)
            c.send(data)
            r = c.response()
            check(r is not None and r[0] == status, what)
            c.close()

        # max_connections = 3: a fourth connection is closed at accept.
        # The connections above close asynchronously: hold three once the server has let
        # each of them in (answered a request).
        held = []
        for _ in range(100):
            if len(held) == 3:
                break
            try:
                h = Raw(s.port)
                h.send(get)
                if h.response():
                    held.append(h)
                    continue
                h.close()
            except OSError:
                pass
            time.sleep(0.1)
        check(len(held) == 3, "three connections are let in")
        # A fourth connection makes room: the one that has waited longest for its client
        # (held[0], idle since its response) is closed, the newcomer is served.
        try:
            extra = Raw(s.port)
            extra.send(get)
            served = extra.response()
            extra.close()
        except OSError:
            served = None
        check(served is not None and served[0] == 200 and held[0].closed(),
              "max_connections: a fourth connection closes the longest-idle one and is served")
        for h in held:
            h.close()
        time.sleep(0.3)
        rc, code, _ = curl(["https://127.0.0.1:%d/health" % s.port])
        check(code == 200 and s.alive(), "the server keeps serving")
    finally:
        s.stop()


def main():
    case, exe, plugin_dir, config = sys.argv[1:5]
    with tempfile.TemporaryDirectory() as d:
        if case == "json":
            case_json(exe, plugin_dir, config, d)
        elif case == "binary":
            case_binary(exe, plugin_dir, config, d, sys.argv[5])
        elif case == "http":
            case_http(exe, plugin_dir, config, d)
        elif case == "clientcert":
            case_clientcert(exe, plugin_dir, config, d)
        else:
            sys.exit("unknown case " + case)
    if failures:
        sys.exit("%d check(s) failed" % len(failures))


if __name__ == "__main__":
    main()
