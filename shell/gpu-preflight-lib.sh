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
# The deadline lives here, in the shell, not in the binary: what we guard
# against is the binary itself hanging (a sysfs read stuck in the kernel,
# a huge log), and only its parent can stop waiting for it.

# Sets _gp_tenths to VALUE (seconds, "2" or "1.5") in tenths of a second;
# returns 1, leaving it unset, when VALUE is not a valid timeout. Same rules
# as parse_timeout in src/parse/settings.rs: 0.1 to 60 s, digits past the first
# decimal dropped.
_gp_parse_tenths() {
	unset _gp_tenths
	case $1 in
	'' | *[!0-9.]* | *.*.* | .* | *.) return 1 ;;
	esac
	_gp_w=${1%%.*}
	case $1 in
	*.*)
		_gp_f=${1#*.}
		_gp_f=${_gp_f%"${_gp_f#?}"}
		;;
	*) _gp_f=0 ;;
	esac
	[ "${#_gp_w}" -le 4 ] || return 1
	# Leading zeros would make the shell read the number as octal.
	_gp_w=${_gp_w#"${_gp_w%%[!0]*}"}
	_gp_x=$((${_gp_w:-0} * 10 + _gp_f))
	[ "$_gp_x" -ge 1 ] && [ "$_gp_x" -le 600 ] || return 1
	_gp_tenths=$_gp_x
	return 0
}

# Sets _gp_timeout (tenths) from CONFIG's `timeout=` and then CMDLINE_FILE's
# `gpu_preflight.timeout=`, each valid value replacing the one before;
# default 2 s. A malformed value is skipped here silently: the binary
# reports it. Same reading as Settings::parse in src/parse/settings.rs; the cases
# both are held to are in tests/data/timeout-cases.txt.
gpu_preflight_timeout() {
	_gp_timeout=20
	# The file: `key=value` lines, key and value trimmed (a CR from a CRLF
	# file included), `#` comment lines. The key is `timeout` or
	# `gpu_preflight.timeout`; no other spelling, as in the binary.
	if [ -r "$1" ]; then
		while IFS= read -r _gp_l || [ -n "$_gp_l" ]; do
			case $_gp_l in
			*=*) ;;
			*) continue ;;
			esac
			_gp_k=${_gp_l%%=*}
			_gp_k=${_gp_k#"${_gp_k%%[![:space:]]*}"}
			_gp_k=${_gp_k%"${_gp_k##*[![:space:]]}"}
			case $_gp_k in
			timeout | gpu_preflight.timeout)
				_gp_v=${_gp_l#*=}
				_gp_v=${_gp_v#"${_gp_v%%[![:space:]]*}"}
				_gp_v=${_gp_v%"${_gp_v##*[![:space:]]}"}
				_gp_parse_tenths "$_gp_v" && _gp_timeout=$_gp_tenths
				;;
			esac
		done <"$1"
	fi
	_gp_line=
	if [ -r "$2" ]; then
		read -r _gp_line <"$2" || :
	fi
	# Most boots do not set it: only then split the line into parameters.
	case $_gp_line in
	*preflight.timeout*) _gp_cmdline_timeout "$_gp_line" ;;
	esac
	return 0
}

# Applies every `gpu_preflight.timeout=` on the command line LINE, in order,
# split into parameters the way the kernel's next_arg() does (and
# parameters() in src/parse/cmdline.rs): blanks separate, double quotes group
# (`a="x y"` is one parameter), a value's leading quote and the parameter's
# closing quote are dropped, everything after a bare `--` belongs to init.
# The kernel treats `-` and `_` in parameter names alike, and so do we:
# `gpu-preflight.timeout=` counts too.
_gp_cmdline_timeout() {
	_gp_rest=$1
	while :; do
		_gp_rest=${_gp_rest#"${_gp_rest%%[![:space:]]*}"}
		[ -n "$_gp_rest" ] || break
		# One parameter: up to a blank outside quotes. Taken in runs
		# between quotes, not a character at a time.
		_gp_tok=
		_gp_inq=
		while [ -n "$_gp_rest" ]; do
			if [ -n "$_gp_inq" ]; then
				_gp_p=${_gp_rest%%\"*}
			else
				_gp_p=${_gp_rest%%[[:space:]\"]*}
			fi
			_gp_tok=$_gp_tok$_gp_p
			_gp_rest=${_gp_rest#"$_gp_p"}
			case $_gp_rest in
			\"*)
				_gp_tok=$_gp_tok\"
				_gp_rest=${_gp_rest#?}
				if [ -n "$_gp_inq" ]; then _gp_inq=; else _gp_inq=1; fi
				;;
			*) break ;;
			esac
		done
		case $_gp_tok in
		-- | \"-- | \"--\") break ;;
		gpu[-_]preflight.timeout=* | \"gpu[-_]preflight.timeout=*)
			_gp_v=${_gp_tok#*=}
			_gp_q=
			case $_gp_tok in \"*) _gp_q=1 ;; esac
			case $_gp_v in
			\"*)
				_gp_v=${_gp_v#?}
				_gp_q=1
				;;
			esac
			if [ -n "$_gp_q" ]; then
				_gp_v=${_gp_v%\"}
			fi
			_gp_parse_tenths "$_gp_v" && _gp_timeout=$_gp_tenths
			;;
		esac
	done
	return 0
}

# Whether PID is still running. kill -0 would also succeed on a child that
# has exited but not been waited for (a zombie), so read its state.
# GPU_PREFLIGHT_PROC stands in for /proc in tests (a process stuck in
# state D cannot be made on demand).
_gp_alive() {
	_gp_proc=${GPU_PREFLIGHT_PROC:-/proc}
	if [ ! -d "$_gp_proc/self" ]; then
		kill -0 "$1" 2>/dev/null
		return
	fi
	_gp_stat=
	{ IFS= read -r _gp_stat <"$_gp_proc/$1/stat"; } 2>/dev/null || return 1
	# Fields after the command name, which is in parentheses.
	_gp_stat=${_gp_stat##*) }
	case $_gp_stat in
	Z* | X* | x*) return 1 ;;
	esac
	return 0
}

# What the hooks say when they stop the boot: the binary exited 4 (strict
# mode, the check failed). dracut shows it with emergency_shell,
# initramfs-tools with panic; both offer a shell whose exit continues the boot.
gpu_preflight_stop_msg="gpu-preflight: strict mode: GPUs with unassigned BARs (see above and /run/gpu-preflight/report.json); boot stopped. Exit this shell to boot anyway, or boot with gpu_preflight.mode=warn."

# One record for the kernel log (journalctl -k), at PRIORITY. Silently
# nothing when /dev/kmsg cannot be opened (printk.devkmsg=off).
gpu_preflight_kmsg() {
	{ printf '<%s>gpu-preflight: %s\n' "$1" "$2" >"${GPU_PREFLIGHT_KMSG:-/dev/kmsg}"; } 2>/dev/null || :
}

# gpu_preflight_run BINARY CONFIG CMDLINE_FILE [ARGS...]
# Runs `BINARY boot ARGS...` and waits for it at most the configured
# timeout. Sets:
#   gpu_preflight_rc   its exit status, or `missing` / `timeout`
#   gpu_preflight_msg  one line for the log when something went wrong
#                      (empty when the binary ran and reported by itself)
# The caller decides what status 4 (strict mode, check failed) means.
gpu_preflight_run() {
	gpu_preflight_rc=
	gpu_preflight_msg=
	_gp_bin=$1
	shift
	_gp_conf=$1
	shift
	_gp_cmdline=$1
	shift
	if [ ! -x "$_gp_bin" ]; then
		gpu_preflight_rc=missing
		gpu_preflight_msg="$_gp_bin is missing or not executable: GPU BARs not checked this boot; boot continues"
		return 0
	fi
	gpu_preflight_timeout "$_gp_conf" "$_gp_cmdline"
	# busybox and coreutils sleep both take fractions; a sleep that does not
	# would turn the loop into a busy one that gives up at once. Steps of
	# 20 ms: the check itself takes a few, and every step the boot waits
	# past its end is boot time lost.
	_gp_step=0.02
	_gp_ticks=$((_gp_timeout * 5))
	if ! sleep 0.01 2>/dev/null; then
		_gp_step=1
		_gp_ticks=$(((_gp_timeout + 9) / 10))
	fi

	# `sleep` is a fork and an exec per step, which on one slow CPU (under
	# TCG 10 ms for busybox, 50 ms for coreutils) is taken from the check
	# itself. Where the shell's `read -t` takes fractions and waits with
	# poll (busybox ash), waiting on a fifo nobody writes to is the same
	# step without a process; other shells (dash, klibc: status 2) sleep.
	# So does bash, which is what runs this in dracut's initramfs (/bin/sh
	# is bash there): in POSIX mode, and in every mode before 5.2, its
	# `read -t` arms SIGALRM and then calls read(2), and an alarm that
	# fires between the two is lost, leaving read(2) blocked on the fifo
	# for good, and the boot with it (a dracut boot of the QEMU suite
	# stalled so once; `read -t 0.00001` on a fifo in `bash --posix` hangs
	# within seconds). In the initramfs /tmp is thrown away at switch_root.
	_gp_fifo=${TMPDIR:-/tmp}/gpu-preflight.$$.fifo
	_gp_readt=
	# shellcheck disable=SC3028 # bash's own variable, empty elsewhere
	if [ -n "${BASH_VERSION-}" ]; then
		_gp_fifo=
	fi
	if [ -n "$_gp_fifo" ] && mkfifo "$_gp_fifo" 2>/dev/null; then
		# shellcheck disable=SC3045 # probed: used only where it works
		{ read -r -t 0.001 _gp_rd <>"$_gp_fifo"; } 2>/dev/null
		case $? in 1 | 142) _gp_readt=1 ;; esac
	else
		# Not ours to remove (an existing file of that name).
		_gp_fifo=
	fi

	# The kernel log's timestamps on this line and on the verdict give the
	# step's duration as the boot saw it.
	gpu_preflight_kmsg 7 "hook start"
	"$_gp_bin" boot "$@" </dev/null &
	_gp_pid=$!
	# Sleep first, then look: the first look then finds the process set up.
	_gp_n=0
	while [ "$_gp_n" -lt "$_gp_ticks" ]; do
		if [ -n "$_gp_readt" ]; then
			# shellcheck disable=SC3045
			read -r -t "$_gp_step" _gp_rd <>"$_gp_fifo"
		else
			sleep "$_gp_step"
		fi
		_gp_n=$((_gp_n + 1))
		_gp_alive "$_gp_pid" || break
	done
	_gp_rmfifo

	_gp_secs="$((_gp_timeout / 10)).$((_gp_timeout % 10))"
	if _gp_alive "$_gp_pid"; then
		kill -KILL "$_gp_pid" 2>/dev/null
		sleep "$_gp_step"
		gpu_preflight_rc=timeout
		if _gp_alive "$_gp_pid"; then
			# Uninterruptible sleep in the kernel (state D): SIGKILL takes
			# effect only when that I/O returns, and `wait` would block the
			# boot until then. Leave it behind.
			gpu_preflight_msg="no result within ${_gp_secs} s and the process is stuck in the kernel (pid $_gp_pid); abandoned it, boot continues"
		else
			wait "$_gp_pid" 2>/dev/null
			gpu_preflight_msg="no result within ${_gp_secs} s (gpu_preflight.timeout); stopped it, boot continues"
		fi
		return 0
	fi
	wait "$_gp_pid"
	gpu_preflight_rc=$?
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

# Removes the wait fifo, if gpu_preflight_run made one and it is still
# there. One `rm` only when there is something to remove: at boot every
# process started is time taken from the check.
_gp_rmfifo() {
	if [ -n "${_gp_fifo-}" ] && [ -p "$_gp_fifo" ]; then
		rm -f "$_gp_fifo"
	fi
	_gp_fifo=
}

# Forgets our variables, so the initramfs' saved state stays clean, and
# removes the wait fifo should gpu_preflight_run have been interrupted.
gpu_preflight_cleanup() {
	_gp_rmfifo
	unset _gp_tenths _gp_w _gp_f _gp_x _gp_timeout _gp_l _gp_k _gp_v \
		_gp_line _gp_rest _gp_tok _gp_inq _gp_p _gp_q \
		_gp_stat _gp_bin _gp_conf _gp_cmdline _gp_step _gp_ticks _gp_pid \
		_gp_n _gp_secs _gp_proc _gp_fifo _gp_readt _gp_rd \
		gpu_preflight_stop_msg
}
