#!/usr/bin/env bash
# Smoke test of the box image, run the way the daemon runs it: no published port, the home in
# a named volume, the lazyboy.box label; CDP and VNC only through `docker exec box-port`.
# Checks that nothing listens on a TCP port, CDP and VNC through box-port, that box (the
# agents' user) reaches neither, box-shot, box-input, profile switching, cookies across docker
# stop/start (with and without the daemon's Browser.close), recovery after docker kill, and the
# hand-over of an older image's volume (profiles given to the browser user, planted symlinks
# dropped). Prints the timings. Needs a Docker engine (scripts/ensure-docker) and python3.
#   BOX_REPO=name/x box/smoke.sh   the same for an image built under another name
set -euo pipefail
cd "$(dirname "$0")"

IMAGE=${BOX_REPO:-lazyboy/box}:latest
VOL=lazyboy-smoke-home
cid=""
fail() { echo "box/smoke.sh: FAIL: $*" >&2; [ -n "$cid" ] && docker logs "$cid" 2>&1 | tail -n 20 >&2; exit 1; }
step() { echo "box/smoke.sh: $*"; }
now_ms() { date +%s%3N; }
cleanup() { [ -n "$cid" ] && docker rm -f "$cid" >/dev/null 2>&1; docker volume rm -f "$VOL" >/dev/null 2>&1 || true; }
trap cleanup EXIT

./build.sh

cdp() { docker exec "$cid" box-cdp "$@"; }
wait_cdp() { # wait_cdp SECS: until the browser answers through the relay
  local deadline=$(($(now_ms) + $1 * 1000))
  until docker exec "$cid" box-cdp --timeout 1 Browser.getVersion >/dev/null 2>&1; do
    [ "$(now_ms)" -lt "$deadline" ] || fail "CDP did not answer within $1 s"
    sleep 0.02
  done
}
cookie() { # cookie NAME: the value Chromium holds for it in the profile on screen, or nothing
  cdp Storage.getCookies | python3 -c "import json,sys; print(''.join(c['value'] for c in json.load(sys.stdin)['cookies'] if c['name']=='$1'))"
}
set_cookie() { # set_cookie NAME VALUE: a persistent cookie (a session cookie is not written to disk)
  cdp Storage.setCookies "{\"cookies\":[{\"name\":\"$1\",\"value\":\"$2\",\"domain\":\"smoke.lazyboy.test\",\"path\":\"/\",\"expires\":$(($(date +%s) + 86400))}]}" >/dev/null
}
restart() { # restart: docker start, wait for CDP; sets $took (ms)
  local t
  t=$(now_ms); docker start "$cid" >/dev/null; wait_cdp 30; took=$(($(now_ms) - t))
}
# port SERVICE PYTHON: run PYTHON with `p`, a Popen of `docker exec -i <box> box-port SERVICE`.
port() {
  python3 - "$cid" "$1" "$2" <<'EOF'
import subprocess, sys
p = subprocess.Popen(["docker", "exec", "-i", sys.argv[1], "box-port", sys.argv[2]],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
exec(sys.argv[3])
p.stdin.close(); p.wait()
EOF
}

docker rm -f $(docker ps -aq --filter label=lazyboy.box.smoke=1) >/dev/null 2>&1 || true
docker volume rm -f "$VOL" >/dev/null 2>&1 || true

step "cold start (docker run with a fresh volume -> CDP answers through the relay)"
t=$(now_ms)
cid=$(docker run -d --shm-size=1g -v "$VOL:/home/box" \
        --label lazyboy.box=1 --label lazyboy.box.smoke=1 "$IMAGE")
wait_cdp 30
cold=$(($(now_ms) - t))
cdp Browser.getVersion | grep -q '"product": "Chrome/' || fail "odd Browser.getVersion"

step "no port: nothing published, nothing listening on TCP in the box"
[ -z "$(docker port "$cid")" ] || fail "the container publishes: $(docker port "$cid")"
listening=$(docker exec "$cid" awk 'FNR > 1 && $4 == "0A"' /proc/net/tcp /proc/net/tcp6)
[ -z "$listening" ] || fail "something listens on TCP in the box: $listening"

step "CDP and VNC through box-port (the daemon's way)"
t=$(now_ms)
port cdp '
p.stdin.write(b"{\"id\":7,\"method\":\"Browser.getVersion\"}\0"); p.stdin.flush()
reply = b""
while not reply.endswith(b"\0"):
    chunk = p.stdout.read1(65536); assert chunk, "box-port cdp hung up"; reply += chunk
assert b"\"id\": 7" in reply and b"Chrome/" in reply, reply' || fail "no CDP through box-port cdp"
via_cdp=$(($(now_ms) - t))
t=$(now_ms)
port vnc '
greeting = p.stdout.read(12)
assert greeting.startswith(b"RFB 003."), greeting' || fail "no RFB greeting through box-port vnc"
via_vnc=$(($(now_ms) - t))

step "box (the agents' user) reaches neither the browser nor the screen"
for cmd in "box-port cdp" "box-port vnc" "box-cdp Browser.getVersion" "box-input getmouselocation" \
           "box-shot" "box-browser default"; do
  rc=0; docker exec -u box "$cid" $cmd </dev/null >/dev/null 2>&1 || rc=$?
  [ "$rc" = 77 ] || fail "'$cmd' as box exited $rc, not 77 (refused)"
done
docker exec -u box -e DISPLAY=:1 "$cid" xdpyinfo >/dev/null 2>&1 && fail "box opened the display"
docker exec -u box "$cid" ls /home/box/profiles >/dev/null 2>&1 && fail "box lists the profiles"
docker exec -u box "$cid" mv /home/box/profiles /home/box/p >/dev/null 2>&1 && fail "box renamed the profiles"

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
docker exec "$cid" box-input getmouselocation | grep -q 'x:100 y:200' || fail "box-input getmouselocation"

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
docker run --rm -v "$VOL:/home/box" --entrypoint sh "$IMAGE" \
  -c 'test -L /home/box/profiles/default/SingletonLock' || fail "expected a stale SingletonLock after docker kill"
since=$(date +%s); restart; killed=$took; sleep 2
docker logs --since "$since" "$cid" 2>&1 | grep -q 'chromium (default) exited' && fail "Chromium exited after docker kill + start"

step "profile switch (box-browser, as root)"
t=$(now_ms); [ "$(docker exec "$cid" box-browser agent-b)" = agent-b ] || fail "box-browser agent-b"; switch=$(($(now_ms) - t))
[ -z "$(cookie smoke1)" ] || fail "profile agent-b sees default's cookie"
docker exec "$cid" box-browser default >/dev/null || fail "box-browser default"
[ "$(cookie smoke1)" = v1 ] || fail "default's cookie gone after switching back"
docker exec "$cid" box-browser default >/dev/null || fail "box-browser on the running profile is a no-op"

step "an older image's volume: profiles handed to the browser user, planted links dropped"
docker stop "$cid" >/dev/null
docker run --rm -v "$VOL:/home/box" --entrypoint sh "$IMAGE" -c '
  chown -R 1000:1000 /home/box && chmod 755 /home/box /home/box/profiles &&
  ln -s /home/box/work/stolen /home/box/profiles/default/planted' || fail "making an old layout"
restart
docker exec "$cid" sh -c '[ "$(stat -c %u:%a /home/box/profiles)" = 1001:700 ] &&
  [ "$(stat -c %U:%G:%a /home/box)" = root:box:1775 ] && [ ! -L /home/box/profiles/default/planted ]' \
  || fail "the old volume was not handed over"
[ "$(cookie smoke1)" = v1 ] || fail "the old volume's cookie is gone"

image_mb=$(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.0f", $1/1e6}')
echo "box/smoke.sh: PASS"
echo "  cold start (docker run -> CDP): ${cold} ms"
echo "  warm start (docker start -> CDP): ${warm} ms; after docker kill: ${killed} ms"
echo "  docker stop: ${stop1} ms (after Browser.close), ${stop2} ms (bare)"
echo "  box-port cdp, one command: ${via_cdp} ms; box-port vnc to the greeting: ${via_vnc} ms"
echo "  box-shot via docker exec: ${shot} ms; profile switch: ${switch} ms"
echo "  image: ${image_mb} MB"
