"""Runs `xlacel serve` for the server tests and tools: start on a free port, wait until
/health says ready, stop with a signal. Loopback only."""
import http.client
import json
import os
import re
import signal
import subprocess
import threading
import time
import unittest

import openai


class ServerProcess:
    def __init__(self, xlacel, *args, ready_timeout=1800, poll_seconds=0.2):
        self.poll_seconds = poll_seconds  # between /health requests while it loads
        self.log_lines = []
        self.process = subprocess.Popen(
            [xlacel, "serve", "--port", "0", *args],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.port = None
        self._port_known = threading.Event()
        self._reader = threading.Thread(target=self._read_log, daemon=True)
        self._reader.start()
        if not self._port_known.wait(120) or self.port is None:
            self.stop()
            raise RuntimeError("xlacel serve did not start listening:\n" + self.log())
        self.health_statuses = []
        self._wait_ready(ready_timeout)

    def _read_log(self):
        for line in self.process.stderr:
            self.log_lines.append(line.rstrip("\n"))
            match = re.search(r"listening on http://[^:]+:(\d+)", line)
            if match and self.port is None:
                self.port = int(match.group(1))
                self._port_known.set()
        self._port_known.set()

    def _wait_ready(self, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("xlacel serve exited while loading:\n" + self.log())
            status, body = self.request("GET", "/health")
            self.health_statuses.append((status, body))
            if status == 200:
                return
            time.sleep(self.poll_seconds)
        self.stop()
        raise RuntimeError("xlacel serve was not ready in time:\n" + self.log())

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.port}/v1"

    def log(self):
        return "\n".join(self.log_lines)

    def request(self, method, path, body=None, headers=None, timeout=600):
        """One HTTP request; returns (status, parsed JSON or text)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            data = response.read().decode()
            try:
                return response.status, json.loads(data)
            except ValueError:
                return response.status, data
        finally:
            connection.close()

    def metrics(self):
        status, text = self.request("GET", "/metrics")
        assert status == 200, text
        values = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name] = float(value)
        return values

    def rss_bytes(self):
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def signal(self, number=signal.SIGTERM):
        self.process.send_signal(number)

    def stop(self, timeout=60):
        """SIGTERM, then the exit status (killed after `timeout` seconds)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise
        finally:
            self._reader.join(5)


def xlacel_path():
    return os.environ.get("XLACEL_BIN", os.path.join(os.path.dirname(__file__), "../../build/xlacel"))


class ServedModelTest(unittest.TestCase):
    """Tests against one `xlacel serve` for the whole class: `server_args` are its flags; the
    class has `server`, an official `client` and the served `model`, and the server must exit 0."""
    server_args = ()

    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(xlacel_path(), *cls.server_args)
        cls.client = openai.OpenAI(base_url=cls.server.base_url, api_key="unused",
                                   max_retries=0, timeout=600)
        cls.model = cls.client.models.list().data[0].id

    @classmethod
    def tearDownClass(cls):
        status = cls.server.stop()
        assert status == 0, f"exit status {status}\n{cls.server.log()}"
