"""The client libraries' packages, as `make dist` builds them, install offline from the
file alone and work: the wheel and the sdist with pip `--no-index`, the npm tarball with
npm `--offline` (it has no dependencies)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
PYTHON_CLIENT = ROOT / "clients" / "python"
# Standard Webhooks' first vector: what the installed copy must verify.
CHECK = """
import connectapi_client, sys
from connectapi_client.webhooks import _signed
assert connectapi_client.__file__.startswith(sys.argv[1]), connectapi_client.__file__
_signed(b'{"test": 2432232314}', {"webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp": "1614265330",
        "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="},
        ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"], 300, 1614265330.0)
print(connectapi_client.Client(base_url="http://x", api_key="k"))
"""


def test_the_python_wheel_and_sdist_install_offline(tmp_path: Path) -> None:
    built = tmp_path / "built"
    subprocess.run([sys.executable, "-m", "build", "--outdir", str(built), str(PYTHON_CLIENT)], check=True,
                   capture_output=True, timeout=600)
    wheel, sdist = sorted(built.glob("*.whl")), sorted(built.glob("*.tar.gz"))
    assert [w.name for w in wheel] == ["connectapi_client-1.0.0-py3-none-any.whl"]
    assert [s.name for s in sdist] == ["connectapi_client-1.0.0.tar.gz"]
    offline = {**os.environ, "PIP_NO_INDEX": "1", "PIP_CONFIG_FILE": os.devnull}
    for package, extra in ((wheel[0], []), (sdist[0], ["--no-build-isolation"])):
        target = tmp_path / package.name.replace(".", "_")
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", *extra,
                        "--target", str(target), str(package)], check=True, capture_output=True, env=offline,
                       timeout=300)
        assert (target / "connectapi_client" / "py.typed").exists()
        run = subprocess.run([sys.executable, "-c", CHECK, str(target)], capture_output=True, text=True,
                             env={**offline, "PYTHONPATH": str(target)}, timeout=60)
        assert run.returncode == 0 and "Client(base_url='http://x')" in run.stdout, run.stderr


NODE_CHECK = """
import { Client, verifyWebhook, RateLimitedError } from "@connectapi/client";
const body = '{"test": 2432232314}';
const event = await verifyWebhook(body, {"webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
  "webhook-timestamp": "1614265330", "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="},
  "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", { now: 1614265330 * 1000 });
if (event.test !== 2432232314) throw new Error("not verified");
console.log(String(new Client({ baseUrl: "http://x", apiKey: "k" })), typeof RateLimitedError);
"""


def test_the_npm_tarball_installs_offline(tmp_path: Path, built: Path) -> None:
    packed = subprocess.run(["npm", "pack", "--pack-destination", str(tmp_path), "--json"], cwd=built, check=True,
                            capture_output=True, text=True, timeout=300)
    assert '"name": "@connectapi/client"' in packed.stdout
    tarball = tmp_path / "connectapi-client-1.0.0.tgz"
    files = subprocess.run(["tar", "-tzf", str(tarball)], check=True, capture_output=True, text=True).stdout.split()
    assert "package/dist/index.js" in files and "package/dist/index.d.ts" in files
    assert not [f for f in files if f.startswith(("package/src/", "package/test/", "package/node_modules/"))]
    app = tmp_path / "app"
    app.mkdir()
    (app / "package.json").write_text('{"name": "app", "version": "1.0.0", "type": "module"}')
    offline = {**os.environ, "npm_config_offline": "true", "npm_config_cache": str(tmp_path / "empty-cache")}
    subprocess.run(["npm", "install", "--offline", "--no-audit", "--no-fund", str(tarball)], cwd=app, env=offline,
                   check=True, capture_output=True, timeout=300)
    (app / "check.mjs").write_text(NODE_CHECK)
    run = subprocess.run(["node", "check.mjs"], cwd=app, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "Client(baseUrl=http://x) function" in run.stdout, run.stderr
