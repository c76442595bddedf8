"""Weights by name (`albert_tf.checkpoints.download`): release names, `hf:`, `kaggle:` and URLs, fetched from a loopback
HTTP server that serves each source's layout, into caches under `tmp_path`; no test reaches any other host.

The server (127.0.0.1 only) answers at most `MAX_REQUESTS` requests and stops by itself after `MAX_SECONDS`. It
serves a release tarball written here from a tiny model, a Hugging Face repository as the Hub serves one through
`HF_ENDPOINT` (`/<repo>/resolve/<revision>/<file>`, `X-Repo-Commit`, `ETag`, and a 302 to a second origin, the
"CDN", for the LFS file), and a Kaggle model as Kaggle's API serves one (kagglehub pointed at the server through
kagglesdk's endpoint table: a JSON RPC, then a redirect to the archive).
"""

import dataclasses
import hashlib
import io
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
import time

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertModel
from albert_tf.checkpoints import convert
from albert_tf.checkpoints import download as hub
from albert_tf.checkpoints import releases as names  # `convert` is the function (the package re-exports it)
from albert_tf.config import AlbertConfig
from albert_tf.errors import InputError
import original_checkpoints as oc
from loopback_http import Reply, files_app, serving
import repo_paths

REPO = pathlib.Path(repo_paths.REPO)
SPM_BYTES = b"sentencepiece model bytes of the download fixture"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
# transformers 4.x's own TensorFlow directories (tests/references/make_transformers_tf_references.py).
TRANSFORMERS_TF = pathlib.Path(repo_paths.REFERENCES) / "transformers_tf"
CONFIG = dict(vocab_size=53, embedding_size=8, hidden_size=16, num_attention_heads=2, intermediate_size=24,
              max_position_embeddings=32, type_vocab_size=2, hidden_act="gelu", hidden_dropout_prob=0.0,
              attention_probs_dropout_prob=0.0, initializer_range=0.02, num_hidden_layers=2, num_hidden_groups=1,
              inner_group_num=1)


# --- the loopback server ----------------------------------------------------------------------------------------


# --- fixtures ---------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def model_files(tmp_path_factory):
    """A tiny model as a release tarball, a Hugging Face directory and a keras-hub preset archive."""
    root = tmp_path_factory.mktemp("sources")
    tf.keras.utils.set_random_seed(3)
    model = AlbertModel(AlbertConfig.from_dict(CONFIG))
    model(_inputs(), training=False)
    release = root / "albert_tiny"
    oc.save_original_checkpoint(model, str(release / "model.ckpt-best"), slots=())
    os.remove(release / "checkpoint")   # Google's tarballs ship no `checkpoint` state file.
    (release / "albert_config.json").write_text(json.dumps(CONFIG))
    (release / "30k-clean.model").write_bytes(SPM_BYTES)
    tarball = io.BytesIO()
    with tarfile.open(fileobj=tarball, mode="w:gz") as tar:
        tar.add(str(release), arcname="albert_tiny")
    convert(str(release), str(root / "hf"), output_format="hf", model="encoder")
    convert(str(release), str(root / "kh"), output_format="keras_hub", model="encoder")
    preset = io.BytesIO()
    with tarfile.open(fileobj=preset, mode="w:gz") as tar:
        for entry in sorted(os.listdir(root / "kh")):
            tar.add(str(root / "kh" / entry), arcname=entry)
    hf_files = {name: (root / "hf" / name).read_bytes() for name in os.listdir(root / "hf")
                if os.path.isfile(root / "hf" / name)}
    return dict(model=model, outputs=_outputs(model), tarball=tarball.getvalue(), hf=hf_files,
                preset=preset.getvalue(), release_dir=str(release))


def _inputs():
    ids = np.array([[2, 7, 9, 11, 3, 0], [2, 5, 3, 8, 3, 0]], np.int32)
    mask = np.array([[1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1]], np.int32)
    return {"input_ids": tf.constant(ids), "input_mask": tf.constant(mask), "segment_ids": tf.zeros_like(ids)}


def _outputs(model):
    return model(_inputs(), training=False)["sequence_output"].numpy()


def assert_same_model(loaded, model_files):
    np.testing.assert_allclose(_outputs(loaded), model_files["outputs"], atol=1e-5)


@pytest.fixture
def caches(tmp_path, monkeypatch):
    """Every cache under `tmp_path`, no offline switch, no credentials from the environment."""
    for var in ("ALBERT_TF_OFFLINE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN",
                "KAGGLE_API_TOKEN", "KAGGLE_USERNAME", "KAGGLE_KEY", "ALBERT_TF_RELEASES_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ALBERT_TF_CACHE", str(tmp_path / "albert_tf_cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("KAGGLEHUB_CACHE", str(tmp_path / "kagglehub"))
    monkeypatch.setenv("KAGGLE_CONFIG_DIR", str(tmp_path / "kaggle_config"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    import huggingface_hub.constants  # pylint: disable=import-outside-toplevel

    # The client read HF_HOME when it was imported: point its cache and token file at tmp_path as well.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf_home" / "hub"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_TOKEN_PATH", str(tmp_path / "hf_home" / "token"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    return tmp_path


def _release(monkeypatch, server, sha256=None, size=None, name="albert_base_v2"):
    monkeypatch.setenv("ALBERT_TF_RELEASES_URL", server.url + "/albert_models")
    monkeypatch.setitem(names.RELEASES, name, dataclasses.replace(names.RELEASES[name], sha256=sha256, size=size))
    return f"/albert_models/{name}.tar.gz"


# --- release names and URLs -------------------------------------------------------------------------------------

@pytest.mark.e2e
def test_release_name_downloads_checks_caches_and_loads_offline(model_files, caches, monkeypatch, capsys):
    tarball = model_files["tarball"]
    sha = hashlib.sha256(tarball).hexdigest()
    with serving(files_app({"/albert_models/albert_base_v2.tar.gz": tarball})) as server:
        path = _release(monkeypatch, server, sha256=sha, size=len(tarball))
        monkeypatch.setattr(hub, "PROGRESS_MIN_BYTES", 0)
        assert_same_model(AlbertModel.from_pretrained("albert_base_v2"), model_files)
        bar = capsys.readouterr().err
        assert "albert_base_v2" in bar and "B/s" in bar and "100%" in bar, bar   # Size, speed, ETA.
        assert len(server.requests("GET", path)) == 1
    entry = caches / "albert_tf_cache" / "downloads" / "albert_base_v2"
    marker = json.loads((entry / "complete.json").read_text())
    assert marker["sha256"] == sha and marker["path"] == os.path.join("extracted", "albert_tiny")
    assert sorted(os.listdir(entry)) == ["complete.json", "extracted"]   # The archive is gone once extracted.
    # The server is stopped: the second load reads the cache.
    assert_same_model(AlbertModel.from_pretrained("albert_base_v2"), model_files)
    monkeypatch.setenv("ALBERT_TF_OFFLINE", "1")
    assert hub.fetch("albert_base_v2") == str(entry / "extracted" / "albert_tiny")
    # `albert-convert --input=<name>` reads the same cache, in a fresh process, offline.
    out = caches / "converted"
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from albert_tf import commands; sys.argv = ['albert-convert'] + sys.argv[1:]; "
         "commands.run('albert-convert')", "--input=albert_base_v2", f"--output_dir={out}", "--format=hf"],
        capture_output=True, text=True, timeout=240, cwd=caches, env=_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(out / "config.json") as f:
        assert json.load(f)["hidden_size"] == CONFIG["hidden_size"]


def test_a_cut_download_resumes_with_range(model_files, caches, monkeypatch):
    tarball = model_files["tarball"] * 1   # The same bytes; the server cuts its first answer after half.
    path = "/albert_models/albert_large_v2.tar.gz"
    with serving(files_app({path: tarball}, **{path: {"cut_first": True}})) as server:
        _release(monkeypatch, server, sha256=hashlib.sha256(tarball).hexdigest(), name="albert_large_v2")
        directory = hub.fetch("albert_large_v2")
        gets = server.requests("GET", path)
        assert [h.get("range") for _, _, h in gets] == [None, f"bytes={len(tarball) // 2}-"]
    assert sorted(os.listdir(directory)) == ["30k-clean.model", "albert_config.json", "model.ckpt-best.data-00000-of-00001",
                                             "model.ckpt-best.index"]
    # Without retries, a cut leaves the part file and says so; the next call resumes it.
    monkeypatch.setattr(hub, "RETRIES", 0)
    path = "/albert_models/albert_xlarge_v2.tar.gz"
    with serving(files_app({path: tarball}, **{path: {"cut_first": True}})) as server:
        _release(monkeypatch, server, sha256=hashlib.sha256(tarball).hexdigest(), name="albert_xlarge_v2")
        with pytest.raises(InputError, match=r"albert_xlarge_v2.*connection cut.*stay in .*\.part.*resumes"):
            hub.fetch("albert_xlarge_v2")
        assert_same_model(AlbertModel.from_pretrained("albert_xlarge_v2"), model_files)
        assert [h.get("range") for _, _, h in server.requests("GET", path)] == [None, f"bytes={len(tarball) // 2}-"]


def test_checksum_mismatch_and_a_corrupted_archive_are_removed(model_files, caches, monkeypatch):
    tarball = model_files["tarball"]
    bad = b"\x1f\x8b" + bytes(range(256)) * 8   # gzip magic, then garbage: a damaged archive.
    files = {"/albert_models/albert_base_v1.tar.gz": tarball, "/damaged.tar.gz": bad}
    with serving(files_app(files)) as server:
        _release(monkeypatch, server, sha256="0" * 64, name="albert_base_v1")
        with pytest.raises(InputError) as info:
            hub.fetch("albert_base_v1")
        message = str(info.value)
        entry = caches / "albert_tf_cache" / "downloads" / "albert_base_v1"
        assert "Checksum mismatch" in message and hashlib.sha256(tarball).hexdigest() in message and "0" * 64 in message
        assert str(entry / "albert_base_v1.tar.gz.part") in message and "removed" in message
        assert os.listdir(entry) == []
        with pytest.raises(InputError, match=r"Cannot extract the download of `.*damaged.tar.gz`.*removed"):
            hub.fetch(server.url + "/damaged.tar.gz")
        # A URL with its checksum pinned in the fragment.
        good = f"{server.url}/albert_models/albert_base_v1.tar.gz#sha256={hashlib.sha256(tarball).hexdigest()}"
        assert_same_model(AlbertModel.from_pretrained(good), model_files)
        with pytest.raises(InputError, match="Checksum mismatch"):
            hub.fetch(f"{server.url}/albert_models/albert_base_v1.tar.gz#sha256={'1' * 64}")
    leftovers = [p for p in (caches / "albert_tf_cache" / "downloads").rglob("*") if p.name.endswith(".part")]
    assert leftovers == []


def test_offline_404_no_network_timeout_and_unknown_names(model_files, caches, monkeypatch):
    del model_files
    monkeypatch.setenv("ALBERT_TF_OFFLINE", "1")
    with pytest.raises(InputError, match=r"`albert_xxlarge_v2` is not in the cache .*ALBERT_TF_OFFLINE=1 forbids "
                                         r"downloading https://storage.googleapis.com/albert_models/albert_xxlarge_v2"):
        AlbertModel.from_pretrained("albert_xxlarge_v2")
    monkeypatch.delenv("ALBERT_TF_OFFLINE")
    with pytest.raises(InputError, match=r"Unknown model name|neither a local path nor a known model name.*"
                                         r"albert_base_v2.*hf:"):
        AlbertModel.from_pretrained("albert_huge_v9")
    for bad in ("hf:just-a-name", "hf:org/repo@", "kaggle:keras/albert/keras", "kaggle:a/b/c/d/latest",
                "https://example.invalid/x.tar.gz#md5=abc"):
        with pytest.raises(InputError, match=re.escape(bad.split("#")[0])):
            hub.fetch(bad)

    def app(method, path, headers, body):
        del method, headers, body
        return Reply(stall=3.0, body=b"late") if path == "/slow.tar.gz" else Reply(404, b"Not Found")

    with serving(app) as server:
        url = server.url + "/missing/albert_base_v2.tar.gz"
        with pytest.raises(InputError, match=rf"Cannot download `{re.escape(url)}`: {re.escape(url)} answered 404"):
            hub.fetch(url)
        monkeypatch.setenv("ALBERT_TF_DOWNLOAD_TIMEOUT", "0.5")
        with pytest.raises(InputError, match=r"slow.tar.gz.*timed out after 0.5 s \(ALBERT_TF_DOWNLOAD_TIMEOUT\)"):
            hub.fetch(server.url + "/slow.tar.gz")
        _release(monkeypatch, server, name="albert_large_v1")
    with pytest.raises(InputError, match=rf"`albert_large_v1` from {re.escape(server.url)}/albert_models/"
                                         r"albert_large_v1.tar.gz: cannot connect"):
        hub.fetch("albert_large_v1")   # The server is stopped: no network.


def test_a_server_that_stalls_after_the_headers_fails_in_one_line_after_the_retries(caches, monkeypatch):
    """The stall timeout is `ALBERT_TF_DOWNLOAD_TIMEOUT` (and `albert-download --timeout`, the next test); a server
    that sends its headers and then nothing is retried `RETRIES` times (each resuming what arrived), then refused with
    one line naming the URL."""
    body = b"x" * 1000

    def app(method, path, headers, body_in):
        del method, headers, body_in
        return Reply(body=body, stall_body=3.0) if path == "/stalls.bin" else Reply(404, b"Not Found")

    monkeypatch.setattr(hub, "RETRIES", 2)
    with serving(app) as server:
        url = server.url + "/stalls.bin"
        monkeypatch.setenv("ALBERT_TF_DOWNLOAD_TIMEOUT", "1")
        started = time.monotonic()
        with pytest.raises(InputError) as info:
            hub.fetch(url)
        elapsed = time.monotonic() - started
        gets = len(server.requests("GET", "/stalls.bin"))
        message = str(info.value)
        assert "\n" not in message and url in message and "timed out after 1 s" in message, message
        assert gets == 3 and elapsed < 8, (gets, elapsed)   # The first try and two retries, 1 s each.
        monkeypatch.setenv("ALBERT_TF_DOWNLOAD_TIMEOUT", "soon")
        with pytest.raises(InputError, match=r"ALBERT_TF_DOWNLOAD_TIMEOUT='soon': expected a number of seconds"):
            hub.fetch(url)


@pytest.mark.e2e
def test_albert_download_timeout_flag_refuses_a_stalled_server_in_one_line(caches):
    """`albert-download --timeout=1` in a fresh process (the default `RETRIES`): one line on stderr naming the
    URL, exit 2."""

    def app(method, path, headers, body_in):
        del method, headers, body_in
        return Reply(body=b"x" * 1000, stall_body=3.0)

    with serving(app) as server:
        url = server.url + "/stalls.bin"
        code = ("import sys; from albert_tf import commands; sys.argv = ['albert-download'] + sys.argv[1:]; "
                "commands.run('albert-download')")
        proc = subprocess.run([sys.executable, "-c", code, "--timeout=1", url], capture_output=True, text=True,
                              env=_env(ALBERT_TF_CACHE=str(caches / "flag_cache")), cwd=caches, timeout=120)
        gets = len(server.requests("GET", "/stalls.bin"))
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr[-2000:]
    assert last.startswith("albert-download: error: Cannot download") and url in last and "after 1 s" in last, last
    assert gets == hub.RETRIES + 1, gets


def _env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


@pytest.mark.e2e
def test_two_processes_fetching_one_name_end_with_one_copy(model_files, caches, monkeypatch):
    tarball = model_files["tarball"]
    path = "/albert_models/albert_base_zh.tar.gz"
    # The answer waits 4 s, so the second process asks while the first one holds the lock.
    with serving(files_app({path: tarball}, **{path: {"stall": 4.0}})) as server:
        env = _env(ALBERT_TF_RELEASES_URL=server.url + "/albert_models")
        code = "import sys; from albert_tf import commands; sys.argv = ['albert-download'] + sys.argv[1:]; commands.run('albert-download')"
        procs = [subprocess.Popen([sys.executable, "-c", code, name], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=env, cwd=caches)
                 for name in ("albert_base_zh", "albert_base_zh", "albert_nonexistent_v7")]
        results = [(p.wait(timeout=240), p.stdout.read(), p.stderr.read()) for p in procs]
        gets = server.requests("GET", path)
    (rc1, out1, err1), (rc2, out2, err2), (rc3, out3, err3) = results
    assert rc1 == 0 and rc2 == 0, (err1[-2000:], err2[-2000:])
    entry = caches / "albert_tf_cache" / "downloads" / "albert_base_zh"
    assert out1.strip() == out2.strip() == str(entry / "extracted" / "albert_tiny")
    assert len(gets) == 1   # The second process waited on the lock and found the first one's copy.
    assert sorted(os.listdir(entry)) == ["complete.json", "extracted"]
    assert not list((caches / "albert_tf_cache" / "downloads").glob("*/extracting-*"))
    assert rc3 == 2 and out3 == "", err3
    lines = [line for line in err3.splitlines() if line.strip()]
    assert lines[-1].startswith("albert-download: error: Unknown model name `albert_nonexistent_v7`"), err3[-2000:]


def test_a_damaged_cache_entry_is_named_with_the_command_that_refreshes_it(model_files, caches, monkeypatch):
    """Issue row: the extracted `.data` file of a cached download truncated afterwards. Every use checks the
    entry against the sizes and SHA-256 recorded at download; `albert-download NAME` refuses it with one line,
    `albert-download --force NAME` downloads it again."""
    tarball = model_files["tarball"]
    path = "/albert_models/albert_large_zh.tar.gz"
    with serving(files_app({path: tarball})) as server:
        _release(monkeypatch, server, sha256=hashlib.sha256(tarball).hexdigest(), name="albert_large_zh")
        directory = hub.fetch("albert_large_zh")
        entry = caches / "albert_tf_cache" / "downloads" / "albert_large_zh"
        files = json.loads((entry / "complete.json").read_text())["files"]
        data = os.path.join(directory, "model.ckpt-best.data-00000-of-00001")
        assert files[os.path.relpath(data, entry)][0] == os.path.getsize(data)
        with open(data, "r+b") as f:
            f.truncate(os.path.getsize(data) // 2)
        expected = (rf"The cached download of `albert_large_zh` is damaged: `{re.escape(data)}` has \d+ bytes, "
                    r"\d+ when it was downloaded\. Run `albert-download --force albert_large_zh` to download it "
                    r"again\.$")
        with pytest.raises(InputError, match=expected):
            AlbertModel.from_pretrained("albert_large_zh")
        env = _env(ALBERT_TF_RELEASES_URL=server.url + "/albert_models")
        code = "import sys; from albert_tf import commands; sys.argv = ['albert-download'] + sys.argv[1:]; commands.run('albert-download')"
        proc = subprocess.run([sys.executable, "-c", code, "albert_large_zh"], capture_output=True, text=True,
                              env=env, cwd=caches, timeout=240)
        assert proc.returncode == 2 and proc.stdout == "", proc.stderr[-2000:]
        assert re.match("albert-download: error: " + expected[:-1], proc.stderr.strip().splitlines()[-1])
        assert len(server.requests("GET", path)) == 1
        proc = subprocess.run([sys.executable, "-c", code, "--force", "albert_large_zh"], capture_output=True,
                              text=True, env=env, cwd=caches, timeout=240)
        assert proc.returncode == 0 and proc.stdout.strip() == directory, proc.stderr[-2000:]
        assert len(server.requests("GET", path)) == 2
    assert_same_model(AlbertModel.from_pretrained("albert_large_zh"), model_files)
    # A flipped byte (same size) is found by the SHA-256.
    with open(data, "r+b") as f:
        f.seek(10)
        byte = f.read(1)
        f.seek(10)
        f.write(bytes([byte[0] ^ 1]))
    with pytest.raises(InputError, match=r"has other bytes than when it was downloaded .*--force albert_large_zh"):
        hub.fetch("albert_large_zh")


# --- Hugging Face -----------------------------------------------------------------------------------------------

def hf_app(hf_files, cdn_url, sharded=None, cut_first=False, more=None):
    """The Hub's `resolve` endpoint for repository `albert-test/tiny` (and `albert-test/sharded`, and the
    repositories of `more`, `{repo: {filename: bytes}}`): small files with `ETag` and `X-Repo-Commit`, safetensors
    and `.h5` files as LFS files redirected to `cdn_url` (another origin)."""
    repos = {"albert-test/tiny": dict(hf_files, **{"pytorch_model.bin": b"a pickle that must not be fetched"})}
    if sharded:
        repos["albert-test/sharded"] = sharded
    repos.update(more or {})
    blobs = {hashlib.sha256(data).hexdigest(): data for files in repos.values() for data in files.values()}
    cuts = {"done": not cut_first}

    def app(method, path, headers, body):
        del headers, body
        if path.startswith("/cdn/"):
            data = blobs.get(path[len("/cdn/"):])
            if data is None:
                return Reply(404)
            cut = method == "GET" and not cuts["done"]
            cuts["done"] = cuts["done"] or cut
            return Reply(200, data, {"Accept-Ranges": "bytes", "ETag": f'"{path[5:]}"'}, cut=cut)
        match = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
        if not match or match.group(1) not in repos:
            return Reply(404, b"Repository not found", {"X-Error-Code": "RepoNotFound"})
        repo, revision, filename = match.groups()
        if revision not in ("main", COMMIT):
            return Reply(404, b"Revision not found", {"X-Error-Code": "RevisionNotFound"})
        data = repos[repo].get(filename)
        if data is None:
            return Reply(404, b"Entry not found", {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": COMMIT})
        sha = hashlib.sha256(data).hexdigest()
        common = {"X-Repo-Commit": COMMIT, "Accept-Ranges": "bytes"}
        if filename.endswith((".safetensors", ".h5")):
            return Reply(302, b"", dict(common, **{"Location": f"{cdn_url}/cdn/{sha}", "X-Linked-Etag": f'"{sha}"',
                                                  "X-Linked-Size": str(len(data)), "ETag": '"lfs-pointer"'}))
        return Reply(200, data, dict(common, ETag=f'"{hashlib.sha1(data).hexdigest()}"'))

    return app


def _shards(hf_files):
    import safetensors.numpy  # pylint: disable=import-outside-toplevel

    tensors = safetensors.numpy.load(hf_files["model.safetensors"])
    keys = sorted(tensors)
    halves = {"model-00001-of-00002.safetensors": keys[::2], "model-00002-of-00002.safetensors": keys[1::2]}
    files = {k: v for k, v in hf_files.items() if k != "model.safetensors"}
    for name, part in halves.items():
        files[name] = safetensors.numpy.save({k: tensors[k] for k in part}, metadata={"format": "pt"})
    files["model.safetensors.index.json"] = json.dumps(
        {"metadata": {}, "weight_map": {k: n for n, part in halves.items() for k in part}}).encode()
    return files


def test_hf_repository_through_hf_endpoint(model_files, caches, monkeypatch):
    hf_files = model_files["hf"]
    assert {"config.json", "model.safetensors", "spiece.model"} <= set(hf_files), sorted(hf_files)
    monkeypatch.setenv("HF_TOKEN", "hf_secret_test_token")
    import huggingface_hub.constants  # pylint: disable=import-outside-toplevel

    # The client keeps what it read of a cut transfer in 10 MB chunks; the fixture is a few kB.
    monkeypatch.setattr(huggingface_hub.constants, "DOWNLOAD_CHUNK_SIZE", 1024)
    cdn_app = {}   # Both servers answer with one app, made once the CDN's address is known.
    with serving(lambda *a: cdn_app["app"](*a)) as cdn, serving(lambda *a: cdn_app["app"](*a)) as hubsrv:
        cdn_app["app"] = hf_app(hf_files, cdn.url, sharded=_shards(hf_files), cut_first=True)
        monkeypatch.setenv("HF_ENDPOINT", hubsrv.url)
        assert_same_model(AlbertModel.from_pretrained("hf:albert-test/tiny"), model_files)
        assert_same_model(AlbertModel.from_pretrained("hf:albert-test/sharded"), model_files)
        paths = [p for _, p, _ in hubsrv.log + cdn.log]
        assert not [p for p in paths if "pytorch_model" in p], paths
        cdn_gets = [h.get("range") for m, p, h in cdn.log if m == "GET"]
        # Resumed from the last whole chunk the client kept before the cut.
        resumed = re.fullmatch(r"bytes=(\d+)-", cdn_gets[1] or "")
        assert cdn_gets[0] is None and resumed and 0 < int(resumed.group(1)) <= len(hf_files["model.safetensors"]) // 2

        # The token from HF_TOKEN goes to the Hub (not to the CDN) and into no message.
        assert all(h.get("authorization") == "Bearer hf_secret_test_token" for _, _, h in hubsrv.log)
        assert not [h for _, _, h in cdn.log if "hf_secret_test_token" in str(h)]
        with pytest.raises(InputError, match=rf"`hf:albert-test/nope`: repository not found at "
                                             rf"{re.escape(hubsrv.url)}/albert-test/nope/resolve/main/config.json") as e:
            hub.fetch("hf:albert-test/nope")
        assert "hf_secret_test_token" not in str(e.value)
        with pytest.raises(InputError, match=r"revision `v9` not found"):
            hub.fetch("hf:albert-test/tiny@v9")
        before = len(hubsrv.log)
        # A pinned commit that is cached needs no request at all.
        snapshot = hub.fetch(f"hf:albert-test/tiny@{COMMIT}")
        assert len(hubsrv.log) == before and snapshot.endswith(COMMIT)
    # Servers stopped: the cache answers (huggingface_hub's fallback), and offline mode reads only the cache.
    assert_same_model(AlbertModel.from_pretrained("hf:albert-test/tiny"), model_files)
    monkeypatch.setenv("ALBERT_TF_OFFLINE", "1")
    assert_same_model(AlbertModel.from_pretrained("hf:albert-test/sharded"), model_files)
    with pytest.raises(InputError, match=r"`hf:albert-test/other` is not in the Hugging Face cache .*missing "
                                         r"`config.json`.*offline mode"):
        hub.fetch("hf:albert-test/other")


def test_hf_repository_with_only_tf_model_h5(model_files, caches, monkeypatch):
    """A repository without safetensors, as transformers 4.x's `TFAlbertModel.save_pretrained` wrote it
    (`config.json`, `tf_model.h5`): `tf_model.h5` is fetched, never `pytorch_model.bin`, and loads offline as the
    same directory on disk does; a repository with neither safetensors nor `tf_model.h5` is refused in one line."""
    reference = TRANSFORMERS_TF / "TFAlbertModel"
    pickle = {"pytorch_model.bin": b"a pickle that must not be fetched"}
    tfh5 = dict({name: (reference / name).read_bytes() for name in ("config.json", "tf_model.h5")}, **pickle)
    bare = dict({"config.json": tfh5["config.json"]}, **pickle)
    cdn_app = {}   # Both servers answer with one app, made once the CDN's address is known.
    with serving(lambda *a: cdn_app["app"](*a)) as cdn, serving(lambda *a: cdn_app["app"](*a)) as hubsrv:
        cdn_app["app"] = hf_app(model_files["hf"], cdn.url, more={"albert-test/tfh5": tfh5, "albert-test/bare": bare})
        monkeypatch.setenv("HF_ENDPOINT", hubsrv.url)
        snapshot = hub.fetch("hf:albert-test/tfh5")
        assert sorted(os.listdir(snapshot)) == ["config.json", "tf_model.h5"]
        assert (pathlib.Path(snapshot) / "tf_model.h5").read_bytes() == tfh5["tf_model.h5"]
        with pytest.raises(InputError, match=r"`hf:albert-test/bare` has neither `model.safetensors`, "
                                             r"`model.safetensors.index.json` nor `tf_model.h5` .*pytorch_model.bin"):
            hub.fetch("hf:albert-test/bare")
        paths = [p for _, p, _ in hubsrv.log + cdn.log]
        assert [p for p in paths if p.startswith("/cdn/")] and not [p for p in paths if "pytorch_model" in p], paths
    # Servers stopped, offline: the cached `tf_model.h5` stands in for the safetensors.
    monkeypatch.setenv("ALBERT_TF_OFFLINE", "1")
    loaded, expected = AlbertModel.from_pretrained("hf:albert-test/tfh5"), AlbertModel.from_pretrained(str(reference))
    assert len(loaded.weights) == len(expected.weights) > 0
    for ours, theirs in zip(loaded.weights, expected.weights):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=ours.path)


# --- Kaggle -----------------------------------------------------------------------------------------------------

def kaggle_app(preset, version=2):
    """Kaggle's API for model `keras/albert/keras/tiny_test`: `GetModelInstance` (the current version),
    `ListModelInstanceVersionFiles` (a next page, so kagglehub takes the archive), `DownloadModelInstanceVersion`
    (a redirect to the archive in storage)."""
    rpc = "/api/v1/models.ModelApiService/"

    def app(method, path, headers, body):
        del headers
        request = json.loads(body or b"{}") if method == "POST" else {}
        if path.startswith(rpc) and (request.get("modelSlug") != "albert" or request.get("instanceSlug") != "tiny_test"):
            return Reply(404, json.dumps({"code": 404, "message": "Not found"}).encode(),
                         {"Content-Type": "application/json"})
        if path == rpc + "GetModelInstance":
            return Reply(200, json.dumps({"versionNumber": version, "slug": "tiny_test"}).encode(),
                         {"Content-Type": "application/json"})
        if path == rpc + "ListModelInstanceVersionFiles":
            return Reply(200, json.dumps({"files": [{"name": "config.json"}], "nextPageToken": "more"}).encode(),
                         {"Content-Type": "application/json"})
        if path == rpc + "DownloadModelInstanceVersion":
            return Reply(302, b"", {"Location": f"/storage/tiny_test-{version}.tar.gz"})
        if path == f"/storage/tiny_test-{version}.tar.gz":
            return Reply(200, preset, {"Content-Type": "application/octet-stream", "Accept-Ranges": "bytes"})
        return Reply(404, b"Not Found")

    return app


def test_kaggle_model_through_kagglehub(model_files, caches, monkeypatch):
    kaggle_env = pytest.importorskip("kagglesdk.kaggle_env")
    monkeypatch.setenv("KAGGLE_API_ENVIRONMENT", "LOCALHOST")
    with serving(kaggle_app(model_files["preset"])) as server:
        monkeypatch.setitem(kaggle_env._env_to_endpoint, kaggle_env.KaggleEnv.LOCAL, server.url)  # pylint: disable=protected-access
        assert_same_model(AlbertModel.from_pretrained("kaggle:keras/albert/keras/tiny_test"), model_files)
        assert len(server.requests("GET", "/storage/tiny_test-2.tar.gz")) == 1
        with pytest.raises(InputError, match=r"Cannot fetch `kaggle:keras/albert/keras/missing`: "
                                             r"https://www.kaggle.com/models/keras/albert/keras/missing not found"):
            hub.fetch("kaggle:keras/albert/keras/missing")
    expected = caches / "kagglehub" / "models" / "keras" / "albert" / "keras" / "tiny_test" / "2"
    # Server stopped: a pinned version is read from kagglehub's cache; offline, so is the newest cached one.
    assert hub.fetch("kaggle:keras/albert/keras/tiny_test/2") == str(expected)
    monkeypatch.setenv("ALBERT_TF_OFFLINE", "1")
    assert_same_model(AlbertModel.from_pretrained("kaggle:keras/albert/keras/tiny_test"), model_files)
    with pytest.raises(InputError, match=r"`kaggle:keras/albert/keras/tiny_test/3` is not in the kagglehub cache"):
        hub.fetch("kaggle:keras/albert/keras/tiny_test/3")
    shutil.rmtree(expected)
