"""``harness contest deploy DIR``: systemd units for the site and the ladder, and an nginx config.

Written to ``DIR/deploy/`` (nothing is installed: the command prints where each file goes):

- ``<name>-site.service`` and ``<name>-ladder.service``: ``harness contest serve`` (on
  127.0.0.1 only) and ``harness contest run`` as the given user, restarted on failure, stopped
  with SIGINT (the ladder records the games in flight; see docs/contest.md);
- ``<name>.nginx.conf``: https on the given port with the given certificate (http redirects to
  it), every request passed to the site with ``X-Forwarded-For`` *set* to the visitor's address
  (a visitor's own ``X-Forwarded-For`` is thrown away, so no one can pose as another address to
  the sign-in limit) and ``X-Forwarded-Proto``; the request body capped at the upload quota.

contest.yaml is brought in line: ``secure_cookies: true`` (the session cookie only over https),
and, where the site has the ``site.trusted_proxies`` key, the proxy's address (127.0.0.1) in it
(the site believes ``X-Forwarded-For`` from there only; uvicorn's own default is the same).
"""

from __future__ import annotations

import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from harness.contest.config import CONFIG_NAME, ContestConfig, load_contest

__all__ = ["DeployOptions", "write_deploy", "deploy_files"]


@dataclass(frozen=True)
class DeployOptions:
    """Where and how the contest is served."""

    server_name: str = "_"
    site_port: int = 8000
    https_port: int = 443
    http_port: int | None = 80
    listen: str = ""           # an address to listen on ("": every address)
    cert: str = "/etc/letsencrypt/live/HOST/fullchain.pem"
    key: str = "/etc/letsencrypt/live/HOST/privkey.pem"
    user: str = "tablebots"
    python: str = sys.executable


def _unit(cfg: ContestConfig, opts: DeployOptions, what: str, argv: list[str]) -> str:
    command = " ".join(shlex.quote(a) for a in [opts.python, "-m", "harness", "contest", *argv])
    return f"""# written by harness contest deploy: the contest {cfg.name}'s {what}
[Unit]
Description=tablebots contest {cfg.name}: {what}
After=network.target

[Service]
User={opts.user}
WorkingDirectory={cfg.root}
ExecStart={command}
Environment=PYTHONUNBUFFERED=1
# Ctrl-C: the site finishes its requests, the ladder records the games in flight
KillSignal=SIGINT
TimeoutStopSec=90
Restart=on-failure
RestartSec=5

[Install]
WantedBy=multi-user.target
"""


def _nginx(cfg: ContestConfig, opts: DeployOptions) -> str:
    at = f"{opts.listen}:" if opts.listen else ""
    body_kb = cfg.quotas.upload_kb + 64  # the upload and its form's framing; the site refuses more itself
    redirect = "" if opts.http_port is None else f"""
server {{
    listen {at}{opts.http_port};
    server_name {opts.server_name};
    return 301 https://$host:{opts.https_port}$request_uri;
}}
"""
    return f"""# written by harness contest deploy: https in front of the contest {cfg.name}'s site
# (install: copy to /etc/nginx/sites-enabled/ and `nginx -s reload`)
{redirect}
server {{
    listen {at}{opts.https_port} ssl;
    server_name {opts.server_name};
    ssl_certificate {opts.cert};
    ssl_certificate_key {opts.key};
    ssl_protocols TLSv1.2 TLSv1.3;
    client_max_body_size {body_kb}k;
    add_header Strict-Transport-Security "max-age=31536000" always;

    location / {{
        proxy_pass http://127.0.0.1:{opts.site_port};
        proxy_http_version 1.1;
        proxy_set_header Host $host;
        # set, never appended to: a visitor's own X-Forwarded-For is dropped, so the site's
        # sign-in limit counts the address nginx saw
        proxy_set_header X-Forwarded-For $remote_addr;
        proxy_set_header X-Forwarded-Proto $scheme;
        proxy_read_timeout 120s;
    }}
}}
"""


def deploy_files(cfg: ContestConfig, opts: DeployOptions) -> dict[str, str]:
    """The files' names and texts."""
    return {f"{cfg.name}-site.service": _unit(cfg, opts, "site", ["serve", str(cfg.root), "--host", "127.0.0.1",
                                                                   "--port", str(opts.site_port)]),
            f"{cfg.name}-ladder.service": _unit(cfg, opts, "ladder", ["run", str(cfg.root), "--no-progress"]),
            f"{cfg.name}.nginx.conf": _nginx(cfg, opts)}


def _set_key(text: str, key: str, value: str) -> str:
    """``key: value`` at the top level of contest.yaml's text, replacing the key's line if it has one."""
    line = f"{key}: {value}"
    pattern = re.compile(rf"^{re.escape(key)}:.*$", re.M)
    return pattern.sub(line, text, count=1) if pattern.search(text) else text.rstrip("\n") + f"\n{line}\n"


def _trusts_localhost(cfg: ContestConfig) -> bool:
    import ipaddress

    site = getattr(cfg, "site", None)
    return any(ipaddress.ip_address("127.0.0.1") in net for net in getattr(site, "trusted_proxies", ()))


def write_deploy(root: Path, opts: DeployOptions) -> tuple[Path, list[str]]:
    """Write the files to ``root/deploy/`` and set contest.yaml for https; return the folder and
    the lines saying what changed in contest.yaml."""
    from harness.contest import config as config_module

    cfg = load_contest(root)
    folder = cfg.root / "deploy"
    folder.mkdir(exist_ok=True)
    for name, text in deploy_files(cfg, opts).items():
        (folder / name).write_text(text, encoding="utf-8")
    path = cfg.root / CONFIG_NAME
    text = original = path.read_text(encoding="utf-8")
    changed = []
    if not cfg.secure_cookies:
        text = _set_key(text, "secure_cookies", "true")
        changed.append("secure_cookies: true (the session cookie is sent over https only)")
    if "site" in config_module.TOP_KEYS and not re.search(r"^site:", text, re.M):
        text = _set_key(text, "site", "{trusted_proxies: ['127.0.0.1']}")
        changed.append("site.trusted_proxies: ['127.0.0.1'] (X-Forwarded-For believed from nginx only)")
    elif "site" in config_module.TOP_KEYS and not _trusts_localhost(cfg):
        changed.append("NOT CHANGED: add 127.0.0.1 to site.trusted_proxies yourself (the site key is yours), "
                       "else the sign-in limit counts nginx, not each visitor")
    if text != original:
        path.write_text(text, encoding="utf-8")
        load_contest(root)  # still a valid config
    return folder, changed
