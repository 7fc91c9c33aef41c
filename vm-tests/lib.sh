# Shared functions for the VM tests. Sourced by bash scripts in vm-tests/.
# shellcheck shell=bash

VT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck disable=SC2034 # used by the scripts that source this file
VT_REPO=$(cd "$VT_DIR/.." && pwd)
VT_WORK=${VT_WORK:-$VT_DIR/work}
VT_CACHE=${VT_CACHE:-$VT_DIR/cache}
# One VM per core; TCG is single-threaded per vCPU.
VT_JOBS=${VT_JOBS:-2}
# Generous for TCG: a direct-kernel boot takes 12-16 s here.
VT_BOOT_TIMEOUT=${VT_BOOT_TIMEOUT:-150}
VT_OVMF=${VT_OVMF:-/usr/share/ovmf/OVMF.fd}

vt_log() { printf '%s\n' "vm-tests: $*" >&2; }
vt_die() { printf '%s\n' "vm-tests: error: $*" >&2; exit 1; }

# ---------------------------------------------------------------- scenarios

declare -A VT_SC=()
VT_SCENARIOS=()

# scenario NAME key=value... (see scenarios.sh for the keys)
scenario() {
    local name=$1 kv
    shift
    VT_SCENARIOS+=("$name")
    VT_SC[$name.name]=$name
    for kv in "$@"; do
        case $kv in
        *=*) VT_SC[$name.${kv%%=*}]=${kv#*=} ;;
        *) vt_die "scenario $name: '$kv' is not key=value" ;;
        esac
    done
}

# sc NAME FIELD [DEFAULT]: print a scenario field.
sc() {
    local v=${VT_SC[$1.$2]-}
    printf '%s' "${v:-${3-}}"
}

vt_load_scenarios() {
    # shellcheck source=vm-tests/scenarios.sh
    . "$VT_DIR/scenarios.sh"
}

# vt_select PATTERN...: print the scenario names matching any shell pattern
# (all when none given), in table order.
vt_select() {
    local name pat
    for name in "${VT_SCENARIOS[@]}"; do
        if [ $# -eq 0 ]; then
            printf '%s\n' "$name"
            continue
        fi
        for pat in "$@"; do
            # shellcheck disable=SC2053
            if [[ $name == $pat ]]; then
                printf '%s\n' "$name"
                break
            fi
        done
    done
}

# ------------------------------------------------------------- host tools

# vt_need CMD:PACKAGE...: install the packages whose command is missing.
vt_need() {
    local pair cmd pkgs=()
    for pair in "$@"; do
        cmd=${pair%%:*}
        case $cmd in
        /*) [ -e "$cmd" ] && continue ;;
        *) command -v "$cmd" >/dev/null 2>&1 && continue ;;
        esac
        pkgs+=("${pair#*:}")
    done
    [ ${#pkgs[@]} -eq 0 ] && return 0
    [ "$(id -u)" = 0 ] || vt_die "missing packages ${pkgs[*]} and not root to install them"
    vt_log "installing ${pkgs[*]}"
    # Several scripts (or sessions) may install at once: wait for the dpkg
    # lock instead of failing on it.
    local lock=(-o DPkg::Lock::Timeout=600)
    if ! DEBIAN_FRONTEND=noninteractive apt-get "${lock[@]}" install -y --no-install-recommends "${pkgs[@]}" >&2; then
        apt-get "${lock[@]}" update >&2 || true
        DEBIAN_FRONTEND=noninteractive apt-get "${lock[@]}" install -y --no-install-recommends "${pkgs[@]}" >&2 ||
            vt_die "could not install ${pkgs[*]}"
    fi
}

vt_need_base() {
    vt_need qemu-system-x86_64:qemu-system-x86 /usr/share/seabios/bios-256k.bin:seabios \
        "$VT_OVMF:ovmf" cpio:cpio gzip:gzip base64:coreutils timeout:coreutils \
        truncate:coreutils
    # The guest kernel: Debian's own, booted directly.
    compgen -G '/boot/vmlinuz-*' >/dev/null || vt_need /nonexistent-kernel:linux-image-amd64
    # busybox-static replaces the dynamic busybox: the guest images carry no
    # libc.
    dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' ||
        vt_need /nonexistent-busybox:busybox-static
}

# Prints the newest installed kernel version (from /boot/vmlinuz-*).
vt_kver() {
    local k
    k=$(find /boot -maxdepth 1 -name 'vmlinuz-*' -printf '%f\n' | sed 's/^vmlinuz-//' | sort -V | tail -n 1)
    [ -n "$k" ] || vt_die "no kernel in /boot"
    printf '%s' "$k"
}

# ---------------------------------------------------------- guest images

# vt_busybox_image OUT INIT: an initramfs holding static busybox and INIT as
# /init. Its applets are linked at boot by INIT itself.
vt_busybox_image() {
    local out=$1 init=$2 tree
    tree=$(mktemp -d "$VT_WORK/bbimg.XXXXXX") || vt_die "cannot make a directory in $VT_WORK"
    mkdir -p "$tree/bin" "$tree/dev" "$tree/proc" "$tree/sys" "$tree/tmp" "$tree/run"
    cp /bin/busybox "$tree/bin/busybox"
    ln -s busybox "$tree/bin/sh"
    cp "$init" "$tree/init"
    chmod 0755 "$tree/init"
    # The kernel wants /dev/console before init runs.
    mknod -m 600 "$tree/dev/console" c 5 1 2>/dev/null || true
    (cd "$tree" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) | gzip -1 >"$out.tmp"
    mv "$out.tmp" "$out"
    rm -rf "$tree"
}

# ------------------------------------------------------------- sizes

# vt_size_bytes 128G: bytes of a K/M/G/T size.
vt_size_bytes() {
    local n=${1%[KMGT]} u=${1##*[0-9]}
    case $u in
    K) echo $((n << 10)) ;; M) echo $((n << 20)) ;; G) echo $((n << 30)) ;;
    T) echo $((n << 40)) ;; *) echo "$n" ;;
    esac
}

# vt_serial_payload FILE BEGIN END: print the base64 lines between the
# marker lines BEGIN and END, decoded. Carriage returns (the guest tty's
# ONLCR) and anything that is not base64 (firmware escape sequences) are
# dropped. Fails when the END marker never arrived.
vt_serial_payload() {
    local file=$1 begin=$2 end=$3
    tr -d '\r' <"$file" | grep -qx -- "$end" || return 1
    tr -d '\r' <"$file" | sed -n "/^$begin\$/,/^$end\$/p" |
        grep -E '^[A-Za-z0-9+/=]+$' | base64 -d
}

# vt_pool N CMD...: run "CMD ITEM" for each ITEM on stdin, N at a time.
# Returns non-zero when any run failed.
vt_pool() {
    local n=$1 item running=0 failed=0
    shift
    while IFS= read -r item; do
        if [ "$running" -ge "$n" ]; then
            wait -n || failed=1
            running=$((running - 1))
        fi
        "$@" "$item" &
        running=$((running + 1))
    done
    while [ "$running" -gt 0 ]; do
        wait -n || failed=1
        running=$((running - 1))
    done
    return $failed
}

# vt_fmt_cmd ARGS...: the command line, quoted for a shell where needed.
vt_fmt_cmd() {
    local a out=
    for a in "$@"; do
        case $a in
        *[!A-Za-z0-9_./:,=@+-]*) a="'${a//\'/\'\\\'\'}'" ;;
        esac
        out+="${out:+ }$a"
    done
    printf '%s\n' "$out"
}
