#!/usr/bin/env bash
# `make demo`: the whole gateway on one machine, in the foreground.
# `make demo FILTER=module` (FILTER=module scripts/demo.sh): the same, with the filter as an Envoy
# dynamic module (target/libemail_verdict_filter.so, `make module`; envoy/module.template.yaml)
# instead of the Wasm filter.
#
#   client --> Envoy 127.0.0.1:10000 --(POST /signup: email-verdict filter)--> demo app 127.0.0.1:3000
#                       |  callout GET /api/v1/domain/<domain>
#                       v
#              email-verdict serve 127.0.0.1:8080 (admin 127.0.0.1:8081, state sqlite:target/demo/demo.db)
#                       |  DNS
#                       v
#              NSD on a free loopback port with demo/zones/  (unless EMAIL_VERDICT_DNS is set)
#
# Installs only what the demo runs (scripts/install-deps.sh --demo), builds the sidecar and the
# filter (with cargo's progress), starts from a fresh state, creates the gateway's key (plan
# gateway) and a demo key (plan pro), starts everything, prints the keys, the state and curl
# lines, and on Ctrl-C or SIGTERM stops everything it started and exits 0.
#
# Every EMAIL_VERDICT_* variable reaches the sidecar unchanged (EMAIL_VERDICT_LISTEN,
# EMAIL_VERDICT_ADMIN_LISTEN, EMAIL_VERDICT_DNS, ...); EMAIL_VERDICT_STATE replaces the demo
# state sqlite:target/demo/demo.db (which starts empty each run; DEMO_KEEP_STATE=1 keeps it).
# Without EMAIL_VERDICT_DNS the sidecar asks a local NSD that serves only the demo zones, so the
# demo works offline and gives the same answers everywhere.
# DEMO_APP_PORT (default 3000) moves the app. DEMO_SKIP_BUILD=1 skips deps and builds.
# FILTER=wasm (default) or module: which build of the filter Envoy runs. Both read the same
# plugin configuration (envoy/plugin-config.json) and get the key and the mailbox secret from
# Envoy's environment (the Wasm VM through host_env_keys, the module directly).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
run=$root/target/demo
bin=$root/target/release/email-verdict
wasm=$root/target/email_verdict_filter.wasm
module=$root/target/libemail_verdict_filter.so
FILTER=${FILTER:-wasm}

LISTEN=127.0.0.1:10000
ENVOY_ADMIN_PORT=9901
# The demo's NSD: a fixed port, so `email-verdict check --dns 127.0.0.1:10053` reaches it too.
DNS_PORT=${DEMO_DNS_PORT:-10053}
APP_PORT=${DEMO_APP_PORT:-3000}
SIDECAR_LISTEN=${EMAIL_VERDICT_LISTEN:-127.0.0.1:8080}
SIDECAR_ADMIN=${EMAIL_VERDICT_ADMIN_LISTEN:-127.0.0.1:8081}
STATE=${EMAIL_VERDICT_STATE:-sqlite:$run/demo.db}

say() { printf 'demo: %s\n' "$*"; }
die() {
  printf 'demo: error: %s\n' "$*" >&2
  exit 1
}
case $FILTER in
  wasm | module) ;;
  *) die "FILTER=$FILTER: use wasm (the proxy-wasm filter, the default) or module (the Envoy dynamic module)" ;;
esac

# ---- build and install -----------------------------------------------------------------------
if [[ ${DEMO_SKIP_BUILD:-0} != 1 ]]; then
  say "installing what the demo needs and is missing (scripts/install-deps.sh --demo)"
  scripts/install-deps.sh --demo | sed 's/^/  /'
  say "building the sidecar (cargo build --release: a few minutes the first time, seconds after)"
  cargo build --release -p email-verdict
  if [[ $FILTER == module ]]; then
    say "building the filter as an Envoy dynamic module (scripts/build-module.sh)"
    scripts/build-module.sh
  else
    say "building the filter (scripts/build-filter.sh)"
    scripts/build-filter.sh
  fi
fi
[[ -x $bin ]] || die "$bin is missing: run cargo build --release"
if [[ $FILTER == module ]]; then
  [[ -f $module ]] || die "$module is missing: run make module"
else
  [[ -f $wasm ]] || die "$wasm is missing: run make filter"
fi
envoy=$(scripts/envoy-path.sh) || die "no Envoy: run scripts/install-deps.sh"

# ---- helpers -----------------------------------------------------------------------------------
host_of() { local a=${1%:*}; a=${a#[}; a=${a%]}; echo "$a"; }
port_of() { echo "${1##*:}"; }
# The address to connect to for a listen address (0.0.0.0 / [::] mean loopback here).
connect_host() {
  case $1 in 0.0.0.0 | "" | "*") echo 127.0.0.1 ;; "::") echo ::1 ;; *) echo "$1" ;; esac
}
port_busy() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
# wait_until SECONDS WHAT CMD...: polls CMD every 0.1 s; gives up when a started process died.
wait_until() {
  local deadline=$((SECONDS + $1)) what=$2 i
  shift 2
  until "$@" >/dev/null 2>&1; do
    for i in "${!pids[@]}"; do
      alive "$i" || die "${names[$i]} exited while waiting for $what"
    done
    ((SECONDS < deadline)) || die "timed out waiting for $what"
    sleep 0.1
  done
}
http_ok() { # URL [EXPECTED-BODY-SUBSTRING]
  python3 - "$@" <<'PY'
import sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1], timeout=1) as r:
        body = r.read().decode("utf-8", "replace")
        ok = r.status == 200 and (len(sys.argv) < 3 or sys.argv[2] in body)
except Exception:
    ok = False
sys.exit(0 if ok else 1)
PY
}

sc_host=$(connect_host "$(host_of "$SIDECAR_LISTEN")")
sc_port=$(port_of "$SIDECAR_LISTEN")
adm_host=$(connect_host "$(host_of "$SIDECAR_ADMIN")")
adm_port=$(port_of "$SIDECAR_ADMIN")

# Envoy's listeners use SO_REUSEPORT: a stale Envoy on 10000 would silently take half the
# traffic. Refuse to start next to anything already on our ports.
for hp in "127.0.0.1 10000 Envoy" "127.0.0.1 $ENVOY_ADMIN_PORT Envoy-admin" "$sc_host $sc_port sidecar" "127.0.0.1 $DNS_PORT NSD" \
  "$adm_host $adm_port sidecar-admin" "127.0.0.1 $APP_PORT app"; do
  read -r h p what <<<"$hp"
  if port_busy "$h" "$p"; then
    die "$h:$p ($what) is already in use: stop what runs there (an earlier demo?) and try again"
  fi
done

# ---- process bookkeeping ----------------------------------------------------------------------
mkdir -p "$run"
pids=()
names=()
stopping=0
stop_all() {
  ((stopping)) && return
  stopping=1
  # A second Ctrl-C (or a signal sent to the whole process group) must not cut the clean-up short.
  trap '' INT TERM
  if ((${#pids[@]} > 0)); then
    echo
    say "stopping ${names[*]}"
    local i
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
      kill -TERM "${pids[$i]}" 2>/dev/null || true
    done
    # The sidecar finishes requests in flight (a few seconds at most); then SIGKILL anything left.
    local deadline=$((SECONDS + 10))
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
      while kill -0 "${pids[$i]}" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
      kill -KILL "${pids[$i]}" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    say "stopped"
  fi
}
trap stop_all EXIT
# Ctrl-C and SIGTERM are how a demo ends: a clean stop, exit 0.
trap 'stop_all; exit 0' INT TERM

# start NAME CMD...: runs CMD in the background, its output prefixed with [NAME] on our stdout.
# In a session of its own (setsid), so the terminal's Ctrl-C reaches only this script, which then
# stops everything in order: a process that died of the same Ctrl-C first would look like a crash.
start() {
  local name=$1
  shift
  setsid "$@" > >(sed -u "s/^/[$name] /") 2>&1 &
  pids+=($!)
  names+=("$name")
}
alive() { kill -0 "${pids[$1]}" 2>/dev/null; }

# ---- DNS ---------------------------------------------------------------------------------------
dns_args=()
dns_note=""
if [[ -n ${EMAIL_VERDICT_DNS:-} ]]; then
  dns_note="DNS: EMAIL_VERDICT_DNS=$EMAIL_VERDICT_DNS"
else
  nsd=$(command -v nsd || echo /usr/sbin/nsd)
  [[ -x $nsd ]] || die "nsd is missing: run scripts/install-deps.sh"
  nsd_port=$DNS_PORT
  nsd_dir=$run/nsd
  rm -rf "$nsd_dir"
  mkdir -p "$nsd_dir"
  {
    printf 'server:\n  ip-address: 127.0.0.1@%s\n  do-ip6: no\n  username: ""\n  chroot: ""\n' "$nsd_port"
    printf '  database: ""\n  server-count: 1\n  verbosity: 1\n  hide-version: yes\n'
    printf '  zonelistfile: "%s/zone.list"\n  xfrdfile: "%s/xfrd.state"\n  xfrdir: "%s"\n' "$nsd_dir" "$nsd_dir" "$nsd_dir"
    printf '  pidfile: "%s/nsd.pid"\n  logfile: "%s/nsd.log"\n' "$nsd_dir" "$nsd_dir"
    printf 'remote-control:\n  control-enable: no\n'
    for z in "$root"/demo/zones/*.zone; do
      name=$(basename "$z" .zone)
      [[ $name == root ]] && name=. # every other name: NXDOMAIN, a real answer
      printf 'zone:\n  name: "%s"\n  zonefile: "%s"\n' "$name" "$z"
    done
  } >"$nsd_dir/nsd.conf"
  start nsd "$nsd" -d -c "$nsd_dir/nsd.conf"
  dns_args=(--dns "127.0.0.1:$nsd_port")
  zones=$(cd demo/zones && ls ./*.zone | sed 's|^\./||; s/\.zone$//' | grep -vx root | paste -sd' ')
  dns_note="DNS: a local NSD on 127.0.0.1:$nsd_port serving only the demo zones in demo/zones/ ($zones)
      so the demo works offline. Every other name does not exist there (NXDOMAIN): safe, no mail.
      For real DNS: EMAIL_VERDICT_DNS=1.1.1.1 make demo (or any resolver you can reach)."
fi

# ---- sidecar -----------------------------------------------------------------------------------
if [[ -z ${EMAIL_VERDICT_STATE:-} && ${DEMO_KEEP_STATE:-0} != 1 ]]; then
  rm -f "$run"/demo.db "$run"/demo.db-journal "$run"/demo.db-wal "$run"/demo.db-shm # a fresh start
fi
say "creating the gateway's key (plan gateway) and a demo API key (plan pro) in $STATE"
# The gateway's key is on the unlimited `gateway` plan: end users' junk signups must never spend
# it (on `pro`, 64 of them would exhaust its burst and the next blocked domain would get the
# failure mode instead of a verdict). The key printed for curl is an ordinary customer key.
gateway_key=$("$bin" keys create --plan gateway --name demo-gateway --state "$STATE" | tail -n 1)
key=$("$bin" keys create --plan pro --name demo --state "$STATE" | tail -n 1)
[[ $key == ev_* && $gateway_key == ev_* ]] || die "keys create did not print a key"

# The signup counts' mailbox hash secret (envoy/plugin-config.json's mailbox_secret_env): the
# caller's, else a fresh random one (counts then start again with each demo).
mailbox_secret=${EMAIL_VERDICT_MAILBOX_SECRET:-$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')}

# EMAIL_VERDICT_* from our environment reach it as they are (the key is only Envoy's business).
start sidecar env -u EMAIL_VERDICT_API_KEY EMAIL_VERDICT_MAILBOX_SECRET="$mailbox_secret" \
  "$bin" serve --state "$STATE" "${dns_args[@]}"
wait_until 30 "the sidecar (GET http://$adm_host:$adm_port/healthz)" http_ok "http://$adm_host:$adm_port/healthz" ok

# ---- app ---------------------------------------------------------------------------------------
start app python3 -u demo/app.py --listen "127.0.0.1:$APP_PORT"
wait_until 10 "the demo app on 127.0.0.1:$APP_PORT" http_ok "http://127.0.0.1:$APP_PORT/"

# ---- Envoy -------------------------------------------------------------------------------------
# The Wasm filter (envoy/envoy.template.yaml) or the dynamic module (envoy/module.template.yaml):
# the same plugin configuration, the same routes; the filter's log lines under Envoy's `wasm` or
# `dynamic_modules` logger, its counters under `wasmcustom.` or `dynamicmodulescustom.`.
if [[ $FILTER == module ]]; then
  render=(--template envoy/module.template.yaml --set "MODULE_FILE=$module")
  logger=dynamic_modules
  stats=dynamicmodulescustom
  filter_note="the dynamic module $module"
else
  render=(--set "WASM_FILE=$wasm")
  logger=wasm
  stats=wasmcustom
  filter_note="the Wasm filter $wasm"
fi
python3 scripts/render-envoy.py -o "$run/envoy.yaml" "${render[@]}" \
  --set "SIDECAR_ADDRESS=$sc_host" --set "SIDECAR_PORT=$sc_port" \
  --set "APP_PORT=$APP_PORT" --set "ADMIN_PORT=$ENVOY_ADMIN_PORT"
start envoy env EMAIL_VERDICT_API_KEY="$gateway_key" EMAIL_VERDICT_MAILBOX_SECRET="$mailbox_secret" \
  "$envoy" -c "$run/envoy.yaml" \
  --disable-hot-restart --log-level warn --component-log-level "$logger:info"
wait_until 30 "Envoy (GET http://127.0.0.1:$ENVOY_ADMIN_PORT/ready)" http_ok "http://127.0.0.1:$ENVOY_ADMIN_PORT/ready" LIVE

# ---- what to try -------------------------------------------------------------------------------
cat <<EOF

==========================================================================================
 email-verdict demo is running

 Demo API key (plan pro): $key

 Envoy            http://$LISTEN   (admin http://127.0.0.1:$ENVOY_ADMIN_PORT, stats: /stats?filter=$stats)
 filter           $filter_note   (FILTER=wasm|module make demo)
 demo app         http://127.0.0.1:$APP_PORT
 sidecar          http://$SIDECAR_LISTEN   (admin and dashboard http://$SIDECAR_ADMIN)
 state            $STATE   (starts empty each run; DEMO_KEEP_STATE=1 make demo keeps it)
 the CLI on it    export EMAIL_VERDICT_STATE=$STATE
                  $bin keys list
 $dns_note

 Try, in another terminal:

 # a disposable address: blocked at the gateway, 403, the app never sees it
 curl -si http://$LISTEN/signup -H 'content-type: application/json' -d '{"email": "temp@mailinator.com"}'

 # the same as a form post
 curl -si http://$LISTEN/signup -d 'email=someone@yopmail.com'

 # a normal address: reaches the app, with the verdict headers the filter added
 curl -s http://$LISTEN/signup -H 'content-type: application/json' -d '{"email": "jane@gmail.com"}'
 curl -s http://$LISTEN/signup -F email=ops@shopco.example

 # a typo of a popular provider (.con is no TLD): the app gets x-email-suggestion: gmail.com
 curl -s http://$LISTEN/signup -d 'email=jane@gmail.con'

 # a path variant the app would route to /signup is judged all the same (403)
 curl -si --path-as-is http://$LISTEN//Signup/ -d 'email=temp@mailinator.com'

 # a gRPC signup (acme.v1.Accounts/SignUp, the address at field 1) with a disposable address:
 # refused before the app, as gRPC says it: grpc-status 7 (PERMISSION_DENIED) and a grpc-message
 printf '\x00\x00\x00\x00\x14\x0a\x12bob@mailinator.com' | curl -si --http2-prior-knowledge \\
   http://$LISTEN/acme.v1.Accounts/SignUp -H 'content-type: application/grpc' -H 'te: trailers' --data-binary @-

 # a GraphQL signUp mutation hiding the @ in a string escape: refused with a GraphQL error;
 # other queries on /graphql pass unread
 curl -si http://$LISTEN/graphql -H 'content-type: application/json' \\
   -d '{"query": "mutation { signUp(email: \\"bob\\\\u0040mailinator.com\\") { id } }"}'

 # a forged verdict header does not help (403), and is removed before the app sees anything
 curl -s http://$LISTEN/signup -H 'x-email-verdict: safe' -d 'email=temp@mailinator.com' -o /dev/null -w '%{http_code}\n'
 curl -s http://$LISTEN/signup -H 'x-email-verdict: disposable' -d 'email=jane@gmail.com'

 # the API directly
 curl -s 'http://$SIDECAR_LISTEN/api/v1/domain/mailinator.com?key=$key'
 curl -s -H 'Authorization: Bearer $key' 'http://$SIDECAR_LISTEN/api/v1/domain/John.Doe%40gmail.com'

 # what the filter counted
 curl -s 'http://127.0.0.1:$ENVOY_ADMIN_PORT/stats?filter=$stats'

 Stop with Ctrl-C.
==========================================================================================

EOF

# ---- run until a signal or until something dies ------------------------------------------------
while :; do
  for i in "${!pids[@]}"; do
    if ! alive "$i"; then
      status=0
      wait "${pids[$i]}" || status=$?
      die "${names[$i]} exited (status $status): stopping the demo"
    fi
  done
  sleep 0.5 &
  wait $! || true
done
