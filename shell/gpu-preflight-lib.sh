# shellcheck shell=sh
# The variables set here are read by the scripts that source this file.
# shellcheck disable=SC2034
# gpu-preflight: functions shared by the dracut hook and the initramfs-tools
# boot script. Installed in the image as
# /usr/lib/gpu-preflight/gpu-preflight-lib.sh and sourced, so:
# POSIX sh only (dash, busybox ash, bash), no `exit`, no `set -e`, and every
# variable prefixed `_gp_` or `gpu_preflight_` to stay out of the way of the
# initramfs' own.
#
# The deadline is not kept here: `gpu-preflight boot` reads its settings
# (timeout included), runs the check in a child and abandons it when the
# time is up (src/deadline.rs), so the hook runs it once, in the
# foreground, and waits on nothing else. What stays in shell is what the
# binary cannot say for itself: that it is missing, or that it died.

# What the hooks say when they stop the boot: the binary exited 4 (strict
# mode, the check failed). dracut shows it with emergency_shell,
# initramfs-tools with panic; both offer a shell whose exit continues the boot.
gpu_preflight_stop_msg="gpu-preflight: strict mode: GPUs with unassigned BARs (see above and /run/gpu-preflight/report.json); boot stopped. Exit this shell to boot anyway, or boot with gpu_preflight.mode=warn."

# One record for the kernel log (journalctl -k), at PRIORITY. Silently
# nothing when /dev/kmsg cannot be opened (printk.devkmsg=off). Appended:
# the same to the device, and a file standing in for it keeps every line.
gpu_preflight_kmsg() {
	{ printf '<%s>gpu-preflight: %s\n' "$1" "$2" >>"${GPU_PREFLIGHT_KMSG:-/dev/kmsg}"; } 2>/dev/null || :
}

# gpu_preflight_run BINARY [ARGS...]
# Runs `BINARY boot ARGS...` in the foreground; it returns by its own
# deadline. Sets:
#   gpu_preflight_rc   its exit status, or `missing`
#   gpu_preflight_msg  one line for the log when something went wrong
#                      (empty when the binary ran and reported by itself)
# The caller decides what status 4 (strict mode, check failed) means.
gpu_preflight_run() {
	gpu_preflight_rc=
	gpu_preflight_msg=
	_gp_bin=$1
	shift
	if [ ! -x "$_gp_bin" ]; then
		gpu_preflight_rc=missing
		gpu_preflight_msg="$_gp_bin is missing or not executable: GPU BARs not checked this boot; boot continues"
		return 0
	fi
	# The kernel log's timestamps on these two lines give the step's
	# duration as the boot saw it; printf is built in, no process started.
	gpu_preflight_kmsg 7 "hook start"
	"$_gp_bin" boot "$@" </dev/null
	gpu_preflight_rc=$?
	gpu_preflight_kmsg 7 "hook end"
	# 0 and 4 are the binary's answers; it reports its own check's crash
	# or timeout and exits 0. Anything else is the process itself dying
	# (killed, a broken binary, not an executable at all).
	case $gpu_preflight_rc in
	0 | 4) ;;
	*)
		if [ "$gpu_preflight_rc" -gt 128 ]; then
			gpu_preflight_msg="$_gp_bin crashed (signal $((gpu_preflight_rc - 128))): GPU BARs not checked this boot; boot continues"
		else
			gpu_preflight_msg="$_gp_bin failed (exit status $gpu_preflight_rc): GPU BARs not checked this boot; boot continues"
		fi
		;;
	esac
	return 0
}

# Forgets our variables, so the initramfs' saved state stays clean.
gpu_preflight_cleanup() {
	unset _gp_bin gpu_preflight_stop_msg
}
