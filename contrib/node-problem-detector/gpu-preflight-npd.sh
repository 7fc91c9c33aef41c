#!/bin/sh
# node-problem-detector custom plugin: the boot's GPU BAR check, as
# gpu-preflight left it in /run/gpu-preflight/report.json, made a node
# condition (GPUPreflightProblem) and events.
#
#   gpu-preflight-npd.sh [REPORT [configuration]]
#                         REPORT defaults to /run/gpu-preflight/report.json
#
# Without a mode: the check's verdict (GPUPreflightProblem). With
# `configuration`: whether GPUs that are present and healthy were left
# without addresses by the VM's configuration (GPUUnplacedByVMConfiguration),
# so that a count of the GPUs a node has can tell them from dead ones:
# exit 1 with "vm_configuration: N GPU(s) present, unplaced; setting ID"
# (ID the hint id, `gpu-preflight check` spells it out), exit 0 when no
# GPU is (a healthy node, or a failure that is not the configuration's),
# exit 2 when the report cannot say (made before the field existed).
#
# NPD's plugin contract (pkg/custompluginmonitor/plugin/plugin.go): exit 0
# OK, 1 a problem, anything else unknown; stdout, trimmed, is the
# condition's message, cut at max_output_length (80 by default). So: one
# line, printable ASCII, at most 80 bytes. The plugin only reads one
# regular file on a tmpfs, so it cannot outlast NPD's timeout; a path that
# is not a regular file (a FIFO would block a read) is refused unread.
#
# The report is gpu-preflight's own pretty JSON: the top-level keys are the
# lines indented by two spaces. A file that does not look like that whole
# (truncated, garbage, another program's) is "unknown", never "ok".
#
# The messages leave the path out: 80 bytes are for what is wrong.
# POSIX sh, and only head, tail, sed, tr, awk: it runs in NPD's image.

report=${1:-/run/gpu-preflight/report.json}
mode=${2:-verdict}
max=80

say() {
	printf '%s' "$1" | tr -c ' -~' ' ' | LC_ALL=C awk -v max="$max" '{ print substr($0, 1, max); exit }'
}
unknown() {
	say "gpu-preflight: $1"
	exit 2
}

case $mode in
verdict | configuration) ;;
*) unknown "unknown mode '$mode'" ;;
esac
if [ ! -e "$report" ]; then
	unknown "no report: did the boot check run?"
fi
[ -f "$report" ] || unknown "the report is not a regular file"
[ -r "$report" ] || unknown "cannot read the report"

# top KEY: the value of a top-level key, quotes and trailing comma removed.
top() {
	sed -n "s/^  \"$1\": \\(.*\\)\$/\\1/p" "$report" | head -n 1 | sed -e 's/,$//' -e 's/^"\(.*\)"$/\1/'
}

if [ "$(head -n 1 "$report")" != "{" ] || [ "$(tail -n 1 "$report")" != "}" ]; then
	unknown "the report is not a whole gpu-preflight report"
fi
schema=$(top schema)
verdict=$(top verdict)
diagnosis=$(top diagnosis)
case $schema in
'' | *[!0-9]*) unknown "the report has no schema number" ;;
esac
case $diagnosis in
'' | *[!a-z_]*) unknown "the report has no diagnosis" ;;
esac

# unplaced KEY: the value of KEY inside the top-level
# "unplaced_by_configuration" object.
unplaced() {
	sed -n "/^  \"unplaced_by_configuration\": {\$/,/^  }/ s/^    \"$1\": \\(.*\\)\$/\\1/p" "$report" | head -n 1 | sed -e 's/,$//' -e 's/^"\(.*\)"$/\1/'
}

if [ "$mode" = configuration ]; then
	case $verdict in
	ok | fail) ;;
	*) unknown "the report's verdict is '$verdict', neither ok nor fail" ;;
	esac
	case $(top unplaced_by_configuration) in
	null)
		say "no GPU left unplaced by the VM's configuration"
		exit 0
		;;
	'{')
		gpus=$(unplaced gpus)
		setting=$(unplaced setting)
		case $gpus in
		'' | *[!0-9]*) unknown "unplaced_by_configuration has no GPU count" ;;
		esac
		case $setting in
		'' | *[!a-z0-9-]*) unknown "unplaced_by_configuration has no setting" ;;
		esac
		say "vm_configuration: $gpus GPU(s) present, unplaced; setting $setting"
		exit 1
		;;
	'') unknown "the report does not say (older gpu-preflight)" ;;
	*) unknown "unplaced_by_configuration is not understood" ;;
	esac
fi

case $verdict in
ok)
	found=$(top found)
	say "GPU BAR check passed: ${found:-?} GPU(s), every memory BAR assigned"
	exit 0
	;;
fail)
	summary=$(top summary | sed 's/\\"/"/g')
	say "$diagnosis: ${summary:-the boot check failed}"
	exit 1
	;;
*)
	unknown "the report's verdict is '$verdict', neither ok nor fail"
	;;
esac
