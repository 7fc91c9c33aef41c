#!/bin/bash
# The firmware matrix: the SeaBIOS, OVMF and QEMU builds of
# vm-tests/firmware/matrix.tsv, fetched from Debian's archive with
# `apt-get download` against a private sources list and extracted with
# `dpkg-deb -x` into $VT_CACHE/matrix/<build>/. Nothing is added to the
# machine's own apt configuration and nothing is installed: the sources
# list, the package lists and the download cache are all under
# $VT_CACHE/matrix/apt. The archive's address is the machine's own (the
# URIs of its bookworm entry), with the suites the table names. A suite
# written `ubuntu/SUITE` is Ubuntu's (VT_UBUNTU_ARCHIVE, default
# http://archive.ubuntu.com/ubuntu): Debian has no key of Ubuntu's archive,
# so those lists are read unsigned ([trusted=yes]) and what stands for the
# signature is the table's sha256 of each .deb, checked as for every row.
#
#   vm-tests/matrix.sh            fetch (idempotent; verifies every .deb)
#   vm-tests/matrix.sh --list     the builds and where each one's file is
#
# Sourced by vm-tests/campaign and vm-tests/run (after lib.sh), or run.

if [ -z "${VT_DIR-}" ]; then
    # shellcheck source=vm-tests/lib.sh
    . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
fi
VT_MATRIX_TABLE=${VT_MATRIX_TABLE:-$VT_DIR/firmware/matrix.tsv}
VT_MATRIX=${VT_MATRIX:-$VT_CACHE/matrix}

# The system's QEMU is a build of the matrix too: Debian 12's 7.2.
# shellcheck disable=SC2034 # read by the campaign
VT_MATRIX_QEMUS='qemu-7.2 qemu-10.0.2'
# shellcheck disable=SC2034
VT_MATRIX_FIRMWARES='seabios-1.15.0 seabios-1.16.2 seabios-1.16.3 seabios-1.17.0 ovmf-2020.11 ovmf-2022.02 ovmf-2022.11 ovmf-2024.02 ovmf-2025.02 ovmf-2026.08'

# vt_matrix_mirror: "URI KEYRING" of the machine's Debian archive (the entry
# whose suites include bookworm), from deb822 .sources files or the
# one-line sources.list.
vt_matrix_mirror() {
    local f uri='' key='' suites='' line
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        # deb822: stanzas separated by blank lines.
        uri=$(awk 'BEGIN { RS = ""; FS = "\n" }
            { u = ""; s = ""; k = ""
              for (i = 1; i <= NF; i++) {
                if ($i ~ /^URIs:/) { u = $i; sub(/^URIs:[ \t]*/, "", u); split(u, a, " "); u = a[1] }
                if ($i ~ /^Suites:/) { s = " " $i " " }
                if ($i ~ /^Signed-By:/) { k = $i; sub(/^Signed-By:[ \t]*/, "", k) }
              }
              if (s ~ /[ \t]bookworm[ \t]/ && u != "") { print u, (k == "" ? "-" : k); exit } }' "$f")
        [ -n "$uri" ] && break
    done
    if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
        while read -r line; do
            # deb [opts] URI SUITE COMPONENTS
            # shellcheck disable=SC2001 # a bracketed option list, any text
            line=$(sed 's/\[[^]]*\]//' <<<"$line")
            read -r _ u s _ <<<"$line"
            if [ "$s" = bookworm ]; then
                uri="$u -"
                break
            fi
        done < <(grep -E '^deb ' /etc/apt/sources.list)
    fi
    [ -n "$uri" ] || return 1
    read -r uri key <<<"$uri"
    [ "$key" = - ] && key=/usr/share/keyrings/debian-archive-keyring.gpg
    printf '%s %s\n' "$uri" "$key"
}

# vt_matrix_apt CMD ARGS...: apt-get/apt-cache with the private state.
vt_matrix_apt() {
    local a=$VT_MATRIX/apt cmd=$1
    shift
    "$cmd" -o Dir::Etc::SourceList="$a/sources.list" -o Dir::Etc::SourceParts=/dev/null \
        -o Dir::State::Lists="$a/lists" -o Dir::Cache="$a/cache" \
        -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null \
        -o APT::Sandbox::User=root -o Acquire::Languages=none "$@"
}

# The builds no draw and no scenario boots, only the labs (vm-tests/README.md,
# "Firmware builds outside the draw"): fetched only when VT_MATRIX_LAB=1,
# which `vm-tests/campaign --config` sets when a configuration names one. A
# CI run does not reach for them, nor for Ubuntu's archive.
VT_MATRIX_LAB_BUILDS='seabios-1.15.0 ovmf-2020.11 ovmf-2022.02 ovmf-2024.02'

# vt_matrix_table: the table without comments: "build package version suite sha256".
vt_matrix_table() {
    grep -v '^#' "$VT_MATRIX_TABLE" | grep -v '^[[:space:]]*$'
}

# vt_matrix_rows: the rows to fetch: the lab builds only with VT_MATRIX_LAB=1.
vt_matrix_rows() {
    if [ "${VT_MATRIX_LAB-}" = 1 ]; then
        vt_matrix_table
    else
        vt_matrix_table | awk -F'\t' -v lab=" $VT_MATRIX_LAB_BUILDS " 'index(lab, " " $1 " ") == 0'
    fi
}

# vt_matrix_fetch: fetch and extract every build. Prints one line per build
# ("fetched|cached|SKIPPED build: why") and writes $VT_MATRIX/status with
# the same lines. Returns 0 even when builds were skipped: callers read the
# status (vt_matrix_have).
vt_matrix_fetch() {
    local mirror uri key suites s build pkg ver suite sha deb got a=$VT_MATRIX/apt start
    start=$(date +%s)
    mkdir -p "$a/lists/partial" "$a/cache/archives/partial" "$a/debs"
    : >"$VT_MATRIX/status.tmp"
    if ! mirror=$(vt_matrix_mirror); then
        vt_log "matrix: SKIPPED every build: no bookworm entry in the machine's apt sources to take the archive's address from"
        vt_matrix_rows | cut -f1 | sort -u | sed 's/$/\tSKIPPED\tno Debian archive address/' >"$VT_MATRIX/status"
        return 0
    fi
    read -r uri key <<<"$mirror"
    suites=$(vt_matrix_rows | cut -f4 | sort -u)
    for s in $suites; do
        case $s in
        ubuntu/*) echo "deb [trusted=yes arch=amd64] ${VT_UBUNTU_ARCHIVE:-http://archive.ubuntu.com/ubuntu} ${s#ubuntu/} main" ;;
        *) echo "deb [signed-by=$key] $uri $s main" ;;
        esac
    done >"$a/sources.list"
    # Lists are refreshed when a package is missing from the cache, only.
    local need_update=
    while IFS=$'\t' read -r build pkg ver suite sha; do
        [ -s "$a/debs/${pkg}_${ver#*:}.deb" ] || need_update=1
    done < <(vt_matrix_rows)
    if [ -n "$need_update" ]; then
        vt_matrix_apt apt-get -q update >"$a/update.log" 2>&1 ||
            vt_log "matrix: apt-get update reported errors (see $a/update.log); fetching what can be had"
    fi
    declare -A bad=()
    while IFS=$'\t' read -r build pkg ver suite sha; do
        deb=$a/debs/${pkg}_${ver#*:}.deb
        if [ ! -s "$deb" ]; then
            rm -f "$a"/dl/*.deb
            mkdir -p "$a/dl"
            if ! (cd "$a/dl" && vt_matrix_apt apt-get -q download "$pkg=$ver") >>"$a/download.log" 2>&1; then
                bad[$build]="apt-get download $pkg=$ver failed ($suite): $(tail -n 1 "$a/download.log")"
                continue
            fi
            mv "$a"/dl/"${pkg}"_*.deb "$deb" 2>/dev/null || {
                bad[$build]="apt-get download $pkg=$ver left no .deb"
                continue
            }
        fi
        got=$(sha256sum "$deb" | cut -d' ' -f1)
        if [ "$got" != "$sha" ]; then
            rm -f "$deb"
            bad[$build]="$pkg $ver: sha256 $got, the table pins $sha"
            continue
        fi
        if [ ! -f "$VT_MATRIX/$build/.$pkg.$sha" ]; then
            mkdir -p "$VT_MATRIX/$build"
            dpkg-deb -x "$deb" "$VT_MATRIX/$build" || {
                bad[$build]="dpkg-deb -x $deb failed"
                continue
            }
            touch "$VT_MATRIX/$build/.$pkg.$sha"
        fi
    done < <(vt_matrix_rows)
    # A QEMU build other than the system's loads its own modules (qxl is
    # one): QEMU looks for them in the system's module directory and
    # refuses another build's, so it runs in a private mount namespace where
    # that directory is its own.
    local q
    for q in $VT_MATRIX_QEMUS; do
        [ "$q" = qemu-7.2 ] || [ ! -x "$VT_MATRIX/$q/usr/bin/qemu-system-x86_64" ] || vt_matrix_wrapper "$q"
    done
    local b why
    for b in $(vt_matrix_rows | cut -f1 | awk '!seen[$0]++'); do
        why=${bad[$b]-}
        if [ -z "$why" ] && ! why=$(vt_matrix_check "$b"); then
            :
        fi
        if [ -n "$why" ]; then
            printf '%s\tSKIPPED\t%s\n' "$b" "$why"
        else
            printf '%s\tok\t%s\n' "$b" "$(vt_matrix_file "$b")"
        fi
    done >"$VT_MATRIX/status"
    printf 'qemu-7.2\tok\t%s\n' "$(command -v qemu-system-x86_64 || echo 'not installed')" >>"$VT_MATRIX/status"
    while IFS=$'\t' read -r b st why; do
        if [ "$st" = ok ]; then
            vt_log "matrix: $b: $why"
        else
            vt_log "matrix: SKIPPED $b: $why"
        fi
    done <"$VT_MATRIX/status"
    vt_log "matrix: $(du -sh "$a/debs" | cut -f1) of packages, $(du -sh --exclude=apt "$VT_MATRIX" | cut -f1) in all, in $(($(date +%s) - start))s"
}

# vt_matrix_wrapper BUILD: writes $VT_MATRIX/BUILD/qemu, the build's QEMU
# with its data directory (-L) and its modules.
vt_matrix_wrapper() {
    local d=$VT_MATRIX/$1
    cat >"$d/qemu" <<'WRAP'
#!/bin/sh
# QEMU of a matrix build, with its own data directory and modules
# (written by vm-tests/matrix.sh).
d=$(cd "$(dirname "$0")" && pwd)
exec unshare -m --propagation private sh -c '
    mount --bind "$0/usr/lib/x86_64-linux-gnu/qemu" /usr/lib/x86_64-linux-gnu/qemu || exit 1
    exec "$0/usr/bin/qemu-system-x86_64" -L "$0/usr/share/qemu" "$@"' "$d" "$@"
WRAP
    chmod 0755 "$d/qemu"
}

# vt_matrix_file BUILD: the file a build is used by (firmware image or the
# QEMU binary).
vt_matrix_file() {
    case $1 in
    seabios-*) echo "$VT_MATRIX/$1/usr/share/seabios/bios-256k.bin" ;;
    ovmf-*) echo "$VT_MATRIX/$1/usr/share/ovmf/OVMF.fd" ;;
    qemu-7.2) command -v qemu-system-x86_64 ;;
    qemu-*) echo "$VT_MATRIX/$1/usr/bin/qemu-system-x86_64" ;;
    esac
}

# vt_matrix_check BUILD: prints why the extracted build is unusable.
vt_matrix_check() {
    local f
    f=$(vt_matrix_file "$1")
    if [ ! -s "$f" ]; then
        echo "no $f after extraction"
        return 1
    fi
    case $1 in
    qemu-*)
        if ! "$VT_MATRIX/$1/qemu" --version >/dev/null 2>&1; then
            echo "$f does not run here: $("$VT_MATRIX/$1/qemu" --version 2>&1 | head -n 1)"
            return 1
        fi
        ;;
    esac
    return 0
}

# vt_matrix_have BUILD: true when the build was fetched (or is the system's).
vt_matrix_have() {
    case $1 in
    qemu-7.2) command -v qemu-system-x86_64 >/dev/null ;;
    *) grep -q "^$1	ok	" "$VT_MATRIX/status" 2>/dev/null ;;
    esac
}

# vt_matrix_qemu BUILD: the build's QEMU command (the system's, or the
# wrapper with its own data and modules).
vt_matrix_qemu() {
    case $1 in
    qemu-7.2) echo qemu-system-x86_64 ;;
    *) echo "$VT_MATRIX/$1/qemu" ;;
    esac
}

# vt_matrix_version BUILD: the Debian version of a build's package.
vt_matrix_version() {
    case $1 in
    qemu-7.2) dpkg-query -W -f='${Version}' qemu-system-x86 2>/dev/null ;;
    *) vt_matrix_table | awk -F'\t' -v b="$1" '$1 == b { print $3; exit }' ;;
    esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -u
    case ${1-} in
    --list)
        for b in $VT_MATRIX_QEMUS $VT_MATRIX_FIRMWARES; do
            printf '%-16s %-32s %s\n' "$b" "$(vt_matrix_version "$b")" \
                "$(vt_matrix_have "$b" && vt_matrix_file "$b" || echo 'not fetched')"
        done
        ;;
    '') vt_matrix_fetch ;;
    *) vt_die "usage: vm-tests/matrix.sh [--list]" ;;
    esac
fi
