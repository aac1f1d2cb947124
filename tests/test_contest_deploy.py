"""`harness contest deploy`: the site behind the nginx config it writes (real nginx, https with a
certificate made here, on 127.0.0.1): sign-in with a Secure cookie, an upload, and the sign-in
limit counted per visitor whatever X-Forwarded-For a visitor sends."""

from __future__ import annotations

import re
import shutil
import subprocess
import warnings
from pathlib import Path

from click.testing import CliRunner
from test_contest_backup import _free_port, _harness, _stop, _until

from harness.cli import cli

warnings.filterwarnings("ignore", message=".*httpx.*")
import httpx  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def _cert(folder: Path) -> tuple[Path, Path]:
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key


def _nginx_main(folder: Path, site_conf: Path) -> Path:
    """A main nginx.conf around the deploy's server blocks (paths inside the test's folder)."""
    for name in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (folder / name).mkdir(parents=True)
    main = folder / "nginx.conf"
    main.write_text(f"""daemon off;
user root;
pid {folder}/nginx.pid;
error_log {folder}/error.log;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {folder}/body; proxy_temp_path {folder}/proxy; fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi; scgi_temp_path {folder}/scgi;
    include {site_conf};
}}
""")
    return main


def _signin_page(client: httpx.Client) -> str:
    page = client.get("/signin")
    assert page.status_code == 200
    return re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)


def test_the_site_behind_the_deployed_nginx_signs_in_takes_uploads_and_limits_each_visitor(tmp_path: Path) -> None:
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    assert Path(nginx).exists(), "nginx is needed (.ci/run installs it)"
    root = tmp_path / "course"
    runner = CliRunner()
    assert runner.invoke(cli, ["contest", "init", str(root), "--game", "crisps"]).exit_code == 0
    text = (root / "contest.yaml").read_text().replace("signins_per_minute: 10", "signins_per_minute: 4")
    (root / "contest.yaml").write_text(text)
    token = runner.invoke(cli, ["contest", "team", "add", str(root), "alpha"]).output.strip().splitlines()[-1]
    cert, key = _cert(tmp_path)
    https, http, site_port = _free_port(), _free_port(), _free_port()
    out = runner.invoke(cli, ["contest", "deploy", str(root), "--listen", "127.0.0.1", "--https-port", str(https),
                              "--http-port", str(http), "--site-port", str(site_port), "--cert", str(cert),
                              "--key", str(key), "--user", "root", "--server-name", "127.0.0.1"])
    assert out.exit_code == 0, out.output
    assert "contest.yaml: secure_cookies: true" in out.output
    assert re.search(r"^secure_cookies: true$", (root / "contest.yaml").read_text(), re.M)
    units = {p.name: p.read_text() for p in (root / "deploy").glob("*.service")}
    assert set(units) == {"course-site.service", "course-ladder.service"}
    assert f"contest serve {root} --host 127.0.0.1 --port {site_port}" in units["course-site.service"]
    assert f"contest run {root} --no-progress" in units["course-ladder.service"]
    assert all("KillSignal=SIGINT" in u and "User=root" in u for u in units.values())
    conf = root / "deploy" / "course.nginx.conf"
    assert "proxy_set_header X-Forwarded-For $remote_addr;" in conf.read_text()
    main = _nginx_main(tmp_path / "nginx", conf)
    check = subprocess.run([nginx, "-t", "-c", str(main), "-e", str(tmp_path / "nginx" / "error.log")],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    proxy = subprocess.Popen([nginx, "-c", str(main), "-e", str(tmp_path / "nginx" / "error.log")],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    site = _harness("contest", "serve", str(root), "--port", str(site_port))
    base = f"https://127.0.0.1:{https}"
    try:
        def up() -> bool:
            try:
                return httpx.get(base + "/", verify=str(cert)).status_code == 200
            except httpx.HTTPError:
                return False
        _until(up, 30, "the site through nginx")
        moved = httpx.get(f"http://127.0.0.1:{http}/games")
        assert moved.status_code == 301 and moved.headers["location"] == f"https://127.0.0.1:{https}/games"
        with httpx.Client(base_url=base, verify=str(cert)) as alice:
            csrf = _signin_page(alice)
            r = alice.post("/signin", data={"csrf": csrf, "token": token}, follow_redirects=False)
            assert r.status_code == 303 and r.headers["location"] == "/me"
            cookie = r.headers["set-cookie"]
            assert "contest_session=" in cookie and "Secure" in cookie and "HttpOnly" in cookie
            assert "Team alpha" in alice.get("/me").text
            r = alice.post("/api/submissions", headers={"Authorization": f"Bearer {token}"},
                           data={"runtime": "python"}, files={"file": ("bot.py", (REPO / "bots" / "random_bot.py")
                                                                       .read_bytes())})
            assert r.status_code == 201, r.text
            # wrong tokens from one visitor, each with a forged X-Forwarded-For: still one visitor
            statuses = []
            for i in range(6):
                csrf = _signin_page(alice)
                statuses.append(alice.post("/signin", data={"csrf": csrf, "token": f"tb1_{'x' * 40}"},
                                           headers={"X-Forwarded-For": f"10.0.0.{i}"}).status_code)
            assert statuses[:3] == [401, 401, 401] and statuses[-1] == 429, statuses  # 4 a minute, one was right
        # another visitor (another address, through the same nginx) is not held back by the first
        transport = httpx.HTTPTransport(local_address="127.0.0.2", verify=str(cert))
        with httpx.Client(base_url=base, transport=transport) as bob:
            csrf = _signin_page(bob)
            assert bob.post("/signin", data={"csrf": csrf, "token": f"tb1_{'y' * 40}"}).status_code == 401
    finally:
        _stop(site)
        _stop(proxy)
