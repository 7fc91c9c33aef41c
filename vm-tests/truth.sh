# shellcheck shell=bash
# What a campaign boot showed, read from the files the guest's init sent
# (guest/campaign-init): the stand-ins' BARs as the kernel left them
# (sysfs resource), the addresses the firmware had programmed (the kernel's
# enumeration lines "reg 0x18: [mem ...]", 0 = unprogrammed) and the root
# bus windows. Sourced by vm-tests/campaign.

# vt_truth_json GUESTDIR TOPOLOGY [ORDER]: prints the truth as one JSON
# object. The GPUs are in BDF order, or, given ORDER (bus-0 devices,
# "1c.0 1c.1 10.0 ...", in the order plan numbers the GPUs) and the
# guest's paths file, in the order of the bus-0 device each sits below
# (Proxmox's ports 5 and later are at 10.x, below 1c.x in bus order):
#   gpus[]: {slot, placed (every memory BAR of its functions assigned by
#           the kernel), firmware_programmed (every one programmed by the
#           firmware), bars[]: {bdf, bar, size, fw, final}}
#   windows[]: the root bus's memory windows, "START-END" (hex)
#   window64_start: the lowest root window at or above 4 GiB (hex), or null
#   bus_abandoned: no memory BAR of any device was programmed by the firmware
#   check: the guest's `gpu-preflight check` report (null when absent)
vt_truth_json() {
    local g=$1 check=null paths=/dev/null
    check=$(vt_json_or_null "$g/check.json")
    [ -z "${3-}" ] || [ ! -s "$g/paths" ] || paths=$g/paths
    awk -v check="$check" -v ordlist="${3-}" '
    BEGIN { no = split(ordlist, ord, " "); for (i = 1; i <= no; i++) rank[ord[i]] = i }
    FILENAME ~ /paths$/ {
        # BDF PATH: the first bus-0 device on the path ranks the GPU.
        n = split($2, comp, "/")
        for (i = 1; i <= n; i++) if (comp[i] ~ /^[0-9a-f]+:00:[0-9a-f]+\.[0-7]$/) { d = comp[i]; sub(/^[0-9a-f]+:00:/, "", d); top[$1] = d; break }
        next
    }
    function hexval(s,   n, i, c) {   # low 28 bits are enough for flags
        s = tolower(s); sub(/^0x/, "", s)
        if (length(s) > 7) s = substr(s, length(s) - 6)
        n = 0
        for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; n = n * 16 + c }
        return n
    }
    function iszero(s) { return s ~ /^0x0*$/ }
    function bit(n, b) { return int(n / b) % 2 }
    FILENAME ~ /resources$/ {
        # BDF VENDOR DEVICE CLASS BAR START END FLAGS. A BAR the kernel
        # failed to assign reads 0 0 0 here (its flags are cleared too), so
        # the set of BARs comes from the enumeration lines in dmesg.
        bdf = $1; idx = $5 + 0; fl = hexval($8)
        slot = substr(bdf, 1, length(bdf) - 2)
        if ($2 == "0x1af4" && $3 == "0x1110" && bdf ~ /\.0$/) gpu[slot] = 1
        if (idx > 5) next
        key = bdf "#" idx
        final[key] = (fl != 0 && bit(fl, 512)) ? $6 : "0x0"; endv[key] = $7
        next
    }
    FILENAME ~ /dmesg.txt$/ {
        # The kernel reads each BAR as the firmware left it: "pci BDF: reg
        # 0x18: [mem A-B ...]" (older kernels), "pci BDF: BAR 2 [mem A-B ...]"
        # (6.1 stable and later).
        k = ""
        if (match($0, /pci [0-9a-f]+:[0-9a-f]+:[0-9a-f]+\.[0-7]: reg 0x[0-9a-f]+: \[mem 0x[0-9a-f]+/)) {
            s = substr($0, RSTART, RLENGTH); split(s, w, " ")
            b = w[2]; sub(/:$/, "", b); sub(/:$/, "", w[4]); r = hexval(w[4]); a = w[6]
            if (r >= 16 && r <= 36) k = b "#" int((r - 16) / 4)
        } else if (match($0, /pci [0-9a-f]+:[0-9a-f]+:[0-9a-f]+\.[0-7]: BAR [0-5] \[mem 0x[0-9a-f]+/)) {
            s = substr($0, RSTART, RLENGTH); split(s, w, " ")
            b = w[2]; sub(/:$/, "", b); a = w[6]
            k = b "#" w[4]
        }
        # Only the enumeration pass: later "BAR n [mem ...]: assigned" lines
        # are the kernel'"'"'s own.
        if (k != "" && !(k in fw) && $0 !~ /assigned|releasing|no space|failed|claim/) {
            # Unprogrammed: 0, or the all-ones sizing pattern the firmware
            # left (OVMF does, for a BAR it rejected).
            e = $0; sub(/.*\[mem 0x[0-9a-f]+-/, "", e); sub(/[ \]].*/, "", e)
            if (e ~ /^0x(ffffffff|ffffffffffffffff)$/) a = "0x0"
            fw[k] = a
            sl = substr(b, 1, length(b) - 2); bars[sl] = bars[sl] " " k
            anymem++; if (!iszero(a)) anyprog++
        }
        if (match($0, /root bus resource \[mem 0x[0-9a-f]+-0x[0-9a-f]+/)) {
            s = substr($0, RSTART, RLENGTH); sub(/.*\[mem /, "", s)
            nw++; win[nw] = s
            split(s, p, "-"); st = p[1]; sub(/^0x0*/, "", st)
            if (length(st) > 8) {
                if (w64 == "" || length(st) < length(w64) || (length(st) == length(w64) && st < w64)) w64 = st
            }
        }
        next
    }
    END {
        n = 0
        for (s in gpu) {
            order[++n] = s
            r = (s ".0" in top && top[s ".0"] in rank) ? rank[top[s ".0"]] : 999
            skey[s] = sprintf("%04d %s", r, s)
        }
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (skey[order[j]] < skey[order[i]]) { t = order[i]; order[i] = order[j]; order[j] = t }
        printf "{\"gpus\":["
        for (i = 1; i <= n; i++) {
            s = order[i]; m = split(bars[s], ks, " "); placed = "true"; prog = "true"; out = ""
            for (j = 1; j <= m; j++) {
                if (ks[j] == "") continue
                k = ks[j]; f = (k in fw) ? fw[k] : ""
                if (!(k in final) || iszero(final[k])) placed = "false"
                if (f == "" || iszero(f)) prog = "false"
                split(k, kb, "#")
                out = out (out == "" ? "" : ",") sprintf("{\"bdf\":\"%s\",\"bar\":%d,\"fw\":%s,\"final\":\"%s\",\"end\":\"%s\"}", kb[1], kb[2], f == "" ? "null" : "\"" f "\"", final[k], endv[k])
            }
            printf "%s{\"slot\":\"%s\",\"placed\":%s,\"firmware_programmed\":%s,\"bars\":[%s]}", (i > 1 ? "," : ""), s, placed, prog, out
        }
        printf "],\"windows\":["
        for (i = 1; i <= nw; i++) printf "%s\"%s\"", (i > 1 ? "," : ""), win[i]
        printf "],\"window64_start\":%s", (w64 == "" ? "null" : "\"0x" w64 "\"")
        printf ",\"bus_abandoned\":%s", (anymem > 0 && anyprog == 0) ? "true" : "false"
        printf ",\"check\":%s}\n", check
    }' "$paths" "$g/resources" "$g/dmesg.txt"
}
