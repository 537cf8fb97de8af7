#!/bin/sh
# irqctl metrics and [daemon] metrics_textfile as a fleet's Prometheus meets
# them: irqpilotd on a writable copy of the phone fixture, in a closed loop
# with a stand-in kernel (UFS interrupts counted where the vector's affinity
# points, a "fio" submitting on CPU 6), its metrics fetched twice and its
# textfile read, all three checked by the Prometheus client library's own
# parser of the text format (tests/prom-check.py). Skipped (77) without
# that library: python3-prometheus-client.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
# shellcheck source=tests/lib-daemon.sh
. "$top_srcdir/tests/lib-daemon.sh"

# Debian's package installs for the system python; a python3 earlier on
# PATH (a virtualenv, pyenv) may not have it.
python=""
for p in /usr/bin/python3 python3; do
	if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import prometheus_client.parser' 2>/dev/null; then
		python=$p
		break
	fi
done
if [ -z "$python" ]; then
	echo "1..0 # SKIP the Prometheus text parser is missing: install python3-prometheus-client (scripts/deps --test)"
	exit 77
fi

daemon_test_dirs metrics
textfile=$tmp/textfile/irqpilot.prom

# --- the configuration refuses what it cannot write --------------------------
printf '[daemon]\nmetrics_textfile = irqpilot.prom\n' >"$tmp/relative.conf"
"$bin" --check-config="$tmp/relative.conf" >"$tmp/out" 2>&1
check "a relative metrics_textfile is a configuration error (exit 2)" test $? -eq 2
check "... saying it must be absolute, with FILE:LINE" \
	grep -q "relative.conf:2: metrics_textfile: 'irqpilot.prom' is not an absolute path" "$tmp/out"

cp -a "$top_srcdir/tests/fixtures/phone-arm64" "$root"
mkdir -p "$root/irqpilot" "$tmp/textfile"
cat >"$conf" <<EOF
[daemon]
interval = 0.3
metrics_textfile = $textfile
[policy]
dwell = 1
EOF

standin_kernel "$root" 37 sda 6
pids="$pids $standin_pid"
start_daemon
if wait_for "$limit" test -S "$rt/control"; then ok "the daemon opens its control socket"; else
	bad "the daemon opens its control socket"
	cat "$log"
	exit 1
fi

# --- two fetches and the textfile ---------------------------------------------
moved() { "$ctl" metrics >"$tmp/first" && grep -Eq '^irqpilot_moves_total\{reason="submitters-elsewhere"\} [1-9][0-9]*$' "$tmp/first"; }
check "irqctl metrics counts the move of the UFS vector" wait_for "$limit" moved
check "the textfile is written" test -s "$textfile"
check "... and no temporary file is left beside it" sh -c "[ \$(ls -A '$tmp/textfile' | wc -l) -eq 1 ]"
# A cycle in which a loaded machine starved the stand-in kernel has no
# completions to share; fetch until one had them, a few cycles on.
c1=$(sed -n 's/^irqpilot_cycles_total //p' "$tmp/first")
settled() {
	"$ctl" metrics >"$tmp/second" &&
		grep -q '^irqpilot_completion_locality_ratio{device="sda"} 1$' "$tmp/second" &&
		[ "$(sed -n 's/^irqpilot_cycles_total //p' "$tmp/second")" -gt "$((c1 + 2))" ]
}
check "a later fetch shows sda's completions in its submitters' domain" wait_for "$limit" settled
cp "$textfile" "$tmp/textfile.copy"
"$python" "$top_srcdir/tests/prom-check.py" "$tmp/first" "$tmp/second" "$tmp/textfile.copy" || fail=1

"$ctl" --json metrics >"$tmp/json"
check "irqctl --json metrics gives the text as data" grep -q '"text": "# HELP irqpilot_cycles_total' "$tmp/json"
chmod 755 "$tmp" "$rt"
chmod 666 "$rt/control"
if command -v setpriv >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
	check "nobody may read the metrics, as the status" \
		setpriv --reuid=nobody --regid=nogroup --clear-groups "$ctl" metrics
else
	skip "nobody reading the metrics: needs root and setpriv"
fi

# --- a directory swapped for a link is not written through ----------------------
# The textfile's directory may belong to another user (Debian's
# /var/lib/prometheus/node-exporter is prometheus'), who can rename it and
# leave a link to a directory of root's in its place.
mkdir "$tmp/victim"
ln -s "$tmp/victim" "$tmp/swapped"
cat >"$conf" <<EOF
[daemon]
interval = 0.3
metrics_textfile = $tmp/swapped/irqpilot.prom
[policy]
dwell = 1
EOF
check "reload with the textfile's directory a link" "$ctl" reload
check "the link is refused, and the log says why" wait_for "$limit" \
	grep -q "metrics_textfile $tmp/swapped/irqpilot.prom: Too many levels of symbolic links; .*(a directory on its path is a symbolic link" "$log"
check "... nothing was written where it leads" sh -c "[ -z \"\$(ls -A '$tmp/victim')\" ]"

# --- a textfile that cannot be written costs nothing but a log line --------------
cat >"$conf" <<EOF
[daemon]
interval = 0.3
metrics_textfile = $tmp/no-such-dir/irqpilot.prom
[policy]
dwell = 1
EOF
check "reload with an unwritable textfile" "$ctl" reload
c=$(sed -n 's/^irqpilot_cycles_total //p' "$tmp/second")
later() { [ "$("$ctl" metrics | sed -n 's/^irqpilot_cycles_total //p')" -gt "$((c + 10))" ]; }
check "the daemon goes on cycling" wait_for "$limit" later
check "... and logged the failure once, not every cycle" \
	sh -c "[ \$(grep -c 'metrics_textfile $tmp/no-such-dir/irqpilot.prom: No such file or directory' '$log') -eq 1 ]"
mkdir "$tmp/no-such-dir"
check "once it can, it writes the file again" wait_for "$limit" test -s "$tmp/no-such-dir/irqpilot.prom"
check "... and says so" wait_for "$limit" grep -q "metrics_textfile .* written again" "$log"
check "counters survived the reload" sh -c "[ \$(sed -n 's/^irqpilot_moves_total{reason=\"submitters-elsewhere\"} //p' '$tmp/no-such-dir/irqpilot.prom') -ge 1 ]"

kill -TERM "$daemon"
wait "$daemon"
check "SIGTERM: exit 0" test $? -eq 0
if [ "$fail" -ne 0 ]; then
	echo "--- daemon log"
	cat "$log"
fi
exit $fail
