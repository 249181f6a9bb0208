#!/usr/bin/env bash
# Smoke test of the box image, run the way the daemon will run it: published ports on the
# host's 127.0.0.1, the home in a named volume, the lazyboy.box label. Checks CDP, the noVNC
# page and its websocket to x11vnc, box-shot, box-input, profile switching, cookies across
# docker stop/start (with and without the daemon's Browser.close), and recovery after
# docker kill. Prints the timings. Needs a Docker engine (scripts/ensure-docker) and python3.
set -euo pipefail
cd "$(dirname "$0")"

VOL=lazyboy-smoke-home
CDP=rootfs/usr/local/bin/box-cdp
cid=""
fail() { echo "box/smoke.sh: FAIL: $*" >&2; [ -n "$cid" ] && docker logs "$cid" 2>&1 | tail -n 20 >&2; exit 1; }
step() { echo "box/smoke.sh: $*"; }
now_ms() { date +%s%3N; }
cleanup() { [ -n "$cid" ] && docker rm -f "$cid" >/dev/null 2>&1; docker volume rm -f "$VOL" >/dev/null 2>&1 || true; }
trap cleanup EXIT

./build.sh

cdp() { python3 "$CDP" --http "http://127.0.0.1:$cdp_port" "$@"; }
wait_cdp() { # wait_cdp SECS: poll /json/version until it answers
  local deadline=$(($(now_ms) + $1 * 1000))
  until curl -fsS -m 1 -o /dev/null "http://127.0.0.1:$cdp_port/json/version" 2>/dev/null; do
    [ "$(now_ms)" -lt "$deadline" ] || fail "CDP did not answer within $1 s"
    sleep 0.02
  done
}
ports() { # the host ports Docker chose (they change on every start)
  cdp_port=$(docker port "$cid" 9223/tcp | head -n 1 | sed 's/.*://')
  vnc_port=$(docker port "$cid" 6080/tcp | head -n 1 | sed 's/.*://')
}
cookie() { # cookie NAME: the value Chromium holds for it in the default profile, or nothing
  cdp Storage.getCookies | python3 -c "import json,sys; print(''.join(c['value'] for c in json.load(sys.stdin)['cookies'] if c['name']=='$1'))"
}
set_cookie() { # set_cookie NAME VALUE: a persistent cookie (a session cookie is not written to disk)
  cdp Storage.setCookies "{\"cookies\":[{\"name\":\"$1\",\"value\":\"$2\",\"domain\":\"smoke.lazyboy.test\",\"path\":\"/\",\"expires\":$(($(date +%s) + 86400))}]}" >/dev/null
}
restart() { # restart: docker start, wait for CDP; sets $took (ms) and the new ports
  local t
  t=$(now_ms); docker start "$cid" >/dev/null; ports; wait_cdp 30; took=$(($(now_ms) - t))
}

docker rm -f $(docker ps -aq --filter label=lazyboy.box.smoke=1) >/dev/null 2>&1 || true
docker volume rm -f "$VOL" >/dev/null 2>&1 || true

step "cold start (docker run with a fresh volume -> CDP answers)"
t=$(now_ms)
cid=$(docker run -d --shm-size=1g -p 127.0.0.1::6080 -p 127.0.0.1::9223 -v "$VOL:/home/box" \
        --label lazyboy.box=1 --label lazyboy.box.smoke=1 lazyboy/box:latest)
ports; wait_cdp 30
cold=$(($(now_ms) - t))
curl -fsS "http://127.0.0.1:$cdp_port/json/version" | grep -q '"Browser": "Chrome/' || fail "odd /json/version"

step "noVNC page and websocket (websockify -> x11vnc)"
curl -fsS "http://127.0.0.1:$vnc_port/vnc.html" | grep -qi novnc || fail "/vnc.html is not noVNC"
curl -fsS "http://127.0.0.1:$vnc_port/" | grep -q 'vnc.html' || fail "/ does not lead to vnc.html"
python3 - "$vnc_port" "$CDP" <<'EOF' || fail "no RFB greeting through websockify"
import importlib.machinery, importlib.util, sys
loader = importlib.machinery.SourceFileLoader("box_cdp", sys.argv[2])
spec = importlib.util.spec_from_loader("box_cdp", loader); m = importlib.util.module_from_spec(spec); loader.exec_module(m)
ws = m.WebSocket("127.0.0.1", int(sys.argv[1]), "/websockify", 5)
greeting = ws.recv().encode()
assert greeting.startswith(b"RFB 003."), greeting
EOF

step "screenshot"
t=$(now_ms); docker exec "$cid" box-shot >"${TMPDIR:-/tmp}/box-smoke.png"; shot=$(($(now_ms) - t))
python3 - "${TMPDIR:-/tmp}/box-smoke.png" <<'EOF' || fail "box-shot did not give a 1280x800 PNG"
import struct, sys
d = open(sys.argv[1], "rb").read(24)
assert d[:8] == b"\x89PNG\r\n\x1a\n", d[:8]
assert struct.unpack(">II", d[16:24]) == (1280, 800), struct.unpack(">II", d[16:24])
EOF
rm -f "${TMPDIR:-/tmp}/box-smoke.png"

step "box-input"
docker exec "$cid" box-input mousemove 100 200 >/dev/null || fail "box-input mousemove"
docker exec -u box "$cid" box-input getmouselocation | grep -q 'x:100 y:200' || fail "box-input as box"

step "cookie survives Browser.close + docker stop/start"
set_cookie smoke1 v1
[ "$(cookie smoke1)" = v1 ] || fail "cookie not set"
cdp Browser.close >/dev/null
t=$(now_ms); docker stop "$cid" >/dev/null; stop1=$(($(now_ms) - t))
restart; warm=$took
[ "$(cookie smoke1)" = v1 ] || fail "cookie lost after Browser.close + docker stop"

step "cookie survives a bare docker stop (box-start closes Chromium through CDP)"
set_cookie smoke2 v2
t=$(now_ms); docker stop "$cid" >/dev/null; stop2=$(($(now_ms) - t))
restart
[ "$(cookie smoke2)" = v2 ] || fail "cookie lost after a bare docker stop"

step "docker kill leaves a stale SingletonLock; the next start must still open Chromium"
docker kill "$cid" >/dev/null
docker run --rm -v "$VOL:/home/box" --entrypoint sh lazyboy/box:latest \
  -c 'test -L /home/box/profiles/default/SingletonLock' || fail "expected a stale SingletonLock after docker kill"
since=$(date +%s); restart; killed=$took; sleep 2
docker logs --since "$since" "$cid" 2>&1 | grep -q 'chromium (default) exited' && fail "Chromium exited after docker kill + start"

step "profile switch (box-browser)"
t=$(now_ms); [ "$(docker exec "$cid" box-browser agent-b)" = agent-b ] || fail "box-browser agent-b"; switch=$(($(now_ms) - t))
[ -z "$(cookie smoke1)" ] || fail "profile agent-b sees default's cookie"
docker exec -u box "$cid" box-browser default >/dev/null || fail "box-browser default (as box)"
[ "$(cookie smoke1)" = v1 ] || fail "default's cookie gone after switching back"
docker exec "$cid" box-browser default >/dev/null || fail "box-browser on the running profile is a no-op"

image_mb=$(docker image inspect -f '{{.Size}}' lazyboy/box:latest | awk '{printf "%.0f", $1/1e6}')
echo "box/smoke.sh: PASS"
echo "  cold start (docker run -> CDP): ${cold} ms"
echo "  warm start (docker start -> CDP): ${warm} ms; after docker kill: ${killed} ms"
echo "  docker stop: ${stop1} ms (after Browser.close), ${stop2} ms (bare)"
echo "  box-shot via docker exec: ${shot} ms; profile switch: ${switch} ms"
echo "  image: ${image_mb} MB"
