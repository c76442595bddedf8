"""docs/web: the static page loads an `albert-export --format=mediapipe` classifier with `@mediapipe/tasks-text`
(npm, served from loopback with its wasm files, no CDN) in headless Chromium, classifies typed sentences, and its
answers equal Python's (the original's probabilities, and albert_tf's pipeline on the same file)."""

import http.server
import json
import os
import shutil
import subprocess
import threading
import urllib.parse

import numpy as np
import pytest

import albert_tf
import mediapipe_fixtures as mpf
from albert_tf.export import mediapipe as mediapipe_export

WEB = os.path.join(mpf.REPO, "docs", "web")
PACKAGE = os.path.join(WEB, "node_modules", "@mediapipe", "tasks-text")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
TYPES = {".html": "text/html", ".js": "text/javascript", ".mjs": "text/javascript", ".wasm": "application/wasm",
         ".tflite": "application/octet-stream"}
# Where the CI's installs are missing: .ci/run installs Debian's chromium and runs `npm ci` in docs/web.
MISSING = ("no Chromium on PATH (apt-get install chromium)" if CHROMIUM is None else
           None if os.path.isdir(PACKAGE) else "docs/web/node_modules has no @mediapipe/tasks-text (npm ci in docs/web)")
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync")


class _Site:
    """docs/web at `/`, the export at `/model/model.tflite`, the page's report POSTed to `/report`."""

    def __init__(self, model_path):
        self.report, self.done, self.requests = None, threading.Event(), []
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                path = urllib.parse.urlparse(self.path).path
                site.requests.append(path)
                local = model_path if path == "/model/model.tflite" else os.path.join(WEB, path.lstrip("/"))
                if os.path.realpath(local) != os.path.realpath(model_path) and \
                        not os.path.realpath(local).startswith(os.path.realpath(WEB) + os.sep):
                    self.send_error(404)
                    return
                if not os.path.isfile(local):
                    self.send_error(404)
                    return
                with open(local, "rb") as f:
                    body = f.read()
                self.send_response(200)
                self.send_header("Content-Type", TYPES.get(os.path.splitext(local)[1], "application/octet-stream"))
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                site.report = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                self.send_response(204)
                self.end_headers()
                site.done.set()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.e2e
@pytest.mark.skipif(MISSING is not None, reason=str(MISSING))
def test_the_page_classifies_typed_sentences_as_python_does(tmp_path):
    release = mpf.build_release(tmp_path / "release")
    model_path = mediapipe_export.export_mediapipe_from_checkpoint(
        release["checkpoint"], str(tmp_path / "export"), model="classifier", num_labels=3,
        albert_config_file=release["config_file"], spm_model_file=release["spm"], max_seq_length=mpf.SEQ,
        labels=list(mpf.LABELS))
    site = _Site(model_path)
    query = urllib.parse.urlencode({"sentences": json.dumps(mpf.SENTENCES), "report": "/report"})
    browser = subprocess.Popen([CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                                f"{site.url}/index.html?{query}"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        answered = site.done.wait(timeout=120)
    finally:
        browser.terminate()
        try:
            _, stderr = browser.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            browser.kill()
            _, stderr = browser.communicate()
        site.close()
    assert answered, f"the page sent no answer; requests: {site.requests}; Chromium: {stderr.decode()[-2000:]}"
    assert isinstance(site.report, list), site.report
    assert not any(path.startswith("/http") for path in site.requests)
    assert any(path.endswith(".wasm") for path in site.requests), site.requests
    page = mpf.as_matrix(site.report)
    want, _ = mpf.original_outputs(release, mpf.SENTENCES)
    python = np.array([a["scores"] for a in albert_tf.pipeline("text-classification", model_path)(
        list(mpf.SENTENCES))])
    print(f"browser: max abs probability difference {np.max(np.abs(page - want)):.2e} from the original, "
          f"{np.max(np.abs(page - python)):.2e} from the Python pipeline")
    np.testing.assert_array_equal(np.argmax(page, -1), np.argmax(want, -1))
    np.testing.assert_allclose(page, want, atol=1e-4)
    np.testing.assert_allclose(page, python, atol=1e-4)
