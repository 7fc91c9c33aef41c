# shellcheck shell=bash
# Scoring of the campaign's records (vm-tests/campaign): plan's prediction
# against the boot's truth, one JSON object per record, and the agreement
# table over a results directory. Tolerant of keys a plan binary does not
# have yet: a comparison whose predicted value is absent is "unscored",
# never an agreement. Sourced by vm-tests/campaign.

# vt_hex2dec 0x...: decimal (bash's 64-bit arithmetic); empty for "".
vt_hex2dec() {
    [ -n "$1" ] && [ "$1" != null ] && echo $((16#${1#0x}))
}

# vt_json_or_null FILE: the file's JSON value on one line, or null.
vt_json_or_null() {
    local v=''
    [ -s "$1" ] && v=$(jq -c -s 'if length == 1 then .[0] else null end' "$1" 2>/dev/null)
    echo "${v:-null}"
}

# The summary of `check`'s JSON report that the records keep and the
# scoring reads (a jq filter, for the whole report or a summary already
# made): verdict, diagnosis, the GPUs expected and found, and placed: the
# GPUs (slots: a BDF without its function) whose every function check
# matched it found with all BARs assigned (`ok`).
VT_JQ_CHECK_SUMMARY='if . == null then null
    elif has("gpus") then
      {verdict, diagnosis, expected, found,
       placed: ([.gpus[] | {slot: (.bdf | sub("\\.[0-7]$"; "")), ok}] | group_by(.slot)
                | map(select(all(.[]; .ok == true))) | length)}
    else {verdict, diagnosis, expected, found, placed} end'

# vt_score DIR: prints the record's score. Classes of disagreement:
#   plan_error            plan refused the flags (cannot express the
#                         configuration); the numbers then come from the
#                         base flags ("via": "base") where those ran
#   qemu_refused_unpredicted, firmware_hang_unpredicted,
#   predicted_no_boot_but_booted, no_boot_kind   the boot's outcome
#   placed_over / placed_under   plan places more / fewer GPUs than the
#                         kernel did (every memory BAR assigned)
#   window_base           the 64-bit root window's start differs
#   unprogrammed          GPUs the firmware left unprogrammed (count)
#   bus_abandoned         the firmware abandoned the root bus, or not
#   placement             per-GPU firmware/kernel placement differs
#   check_verdict         `check` in the guest said ok where a GPU was
#                         left unplaced, or the reverse; check_missing: no
#                         report came back
#   plan_check            plan's predicted diagnosis or placed GPUs differ
#                         from what `check` said inside the guest (its
#                         diagnosis, and the GPUs whose every matched
#                         function it found assigned), on a boot plan
#                         predicted
#   truth_unread, hang_escaped   the boot itself failed to be measured
vt_score() {
    local d=$1 out tw='' plan=null base=null prc brc=null truth=null
    out=$(cat "$d/outcome" 2>/dev/null || echo none)
    prc=$(cat "$d/plan.rc" 2>/dev/null || echo null)
    [ -f "$d/plan-base.rc" ] && brc=$(cat "$d/plan-base.rc")
    plan=$(vt_json_or_null "$d/plan.json")
    base=$(vt_json_or_null "$d/plan-base.json")
    truth=$(vt_json_or_null "$d/truth.json")
    if [ "$truth" != null ]; then
        tw=$(vt_hex2dec "$(jq -r '.window64_start // empty' "$d/truth.json")")
    fi
    # The record's configuration; only some of its fields are scored here.
    # shellcheck disable=SC2034
    local qemu fw machine mtype topo gpus vram ram maxmem slots bits model vendor pdpe1gb ports mmio64 hole64 realloc
    # shellcheck disable=SC2034
    local draw=v1 standin=gpu nic=none cpuflags=''
    eval "$(cat "$d/config")"
    jq -n -c --arg id "$(basename "$d")" --arg out "$out" --argjson gpus "$gpus" \
        --arg fw "$fw" --arg qemu "$qemu" --arg machine "$mtype" --arg topo "$topo" \
        --arg draw "$draw" --arg standin "$standin" --arg nic "$nic" \
        --argjson truth "$truth" --argjson plan "$plan" --argjson base "$base" \
        --argjson prc "$prc" --argjson brc "$brc" --arg tw "$tw" \
        --arg secs "$(cat "$d/secs" 2>/dev/null)" --arg cpu "$(cut -d' ' -f2 "$d/cpu_secs" 2>/dev/null)" '
    ($prc == 0 or $prc == 1) as $full_ok
    | (if $full_ok then $plan elif ($brc == 0 or $brc == 1) then $base else null end) as $p
    | (if $full_ok then "full" elif $p != null then "base" else "none" end) as $via
    | ($p.predicted // {}) as $pr
    | (if ($pr | has("no_boot")) then $pr.no_boot
       elif $pr.boots == false then "no_boot" else null end) as $pno
    | (if $truth != null then [$truth.gpus[] | select(.placed)] | length else null end) as $tp
    | (if $truth != null then [$truth.gpus[] | select(.firmware_programmed | not)] | length else null end) as $tu
    | (if ($pr.unassigned_gpus | type) == "number" then $gpus - $pr.unassigned_gpus else null end) as $pp
    | ($p.capacity.window.start // null) as $pw
    | (if $tw == "" then null else ($tw | tonumber) end) as $twn
    | ($truth.check // null | '"$VT_JQ_CHECK_SUMMARY"') as $chk
    | ($pr.diagnosis // null) as $pd
    | [ (if $full_ok | not then "plan_error" else empty end),
        (if $out == "truth_unread" or $out == "hang_escaped" then $out else empty end),
        (if $p == null then empty
         elif $out == "booted" then
           (if $pno != null then "predicted_no_boot_but_booted" else empty end),
           (if $pp == null or $pno != null then empty
            elif $pp > $tp then "placed_over" elif $pp < $tp then "placed_under" else empty end),
           (if $pno != null then empty
            elif ($pw == null) != ($twn == null) then "window_base"
            elif $pw != null and $pw != $twn then "window_base" else empty end),
           (if ($pr.firmware_unprogrammed_gpus | type) == "number" and $pr.firmware_unprogrammed_gpus != $tu
            then "unprogrammed" else empty end),
           (if ($pr.bus_abandoned | type) == "boolean" and $pr.bus_abandoned != $truth.bus_abandoned
            then "bus_abandoned" else empty end),
           (if ($pr.placement | type) == "array" and
               ([$pr.placement[] | [.firmware_programmed, .kernel_assigned]] !=
                [$truth.gpus[] | [.firmware_programmed, .placed]])
            then "placement" else empty end)
         elif $out == "qemu_refused" then
           (if $pno == null then "qemu_refused_unpredicted"
            elif $pno != "qemu_refuses" and $pno != "no_boot" then "no_boot_kind" else empty end)
         elif $out == "firmware_hang" then
           (if $pno == null then "firmware_hang_unpredicted"
            elif $pno != "firmware_hangs" and $pno != "no_boot" then "no_boot_kind" else empty end)
         else empty end),
        (if $out != "booted" then empty
         elif $chk == null then "check_missing"
         elif (($chk.verdict == "ok") != ($tp == $gpus)) then "check_verdict" else empty end),
        (if $out != "booted" or $chk == null or $p == null or $pno != null then empty
         elif $pd != $chk.diagnosis or $pp != $chk.placed then "plan_check" else empty end)
      ] as $classes
    | {id: $id, draw: $draw, fw: $fw, qemu: $qemu, machine: $machine, topology: $topo, gpus: $gpus,
       standin: $standin, nic: $nic,
       outcome: $out, secs: ($secs | tonumber? // null), cpu_secs: ($cpu | tonumber? // null), via: $via, plan_rc: $prc,
       truth: {placed: $tp, window64_start: $twn, unprogrammed: $tu,
               bus_abandoned: (if $truth == null then null else $truth.bus_abandoned end)},
       plan: {placed: $pp, window64_start: $pw, unprogrammed: ($pr.firmware_unprogrammed_gpus // null),
              bus_abandoned: (if ($pr.bus_abandoned | type) == "boolean" then $pr.bus_abandoned else null end), no_boot: $pno, ok: ($pr.ok // null),
              diagnosis: $pd},
       check: $chk,
       classes: $classes}'
}

# vt_table DIR [LABEL]: the agreement table of the scored records in DIR,
# per firmware build and topology, the classes, and the one-line
# reproducers (also written to DIR/table.txt and DIR/disagreements.txt);
# LABEL names the records in the first line (default: DIR).
vt_table() {
    local r=$1 all
    all=$(cat "$r"/[0-9][0-9][0-9][0-9]/score.json 2>/dev/null | jq -s -c .)
    {
        echo "campaign table: $(jq length <<<"$all") scored record(s) in ${2:-$r}"
        [ -f "$r/campaign-info" ] && sed 's/^/  /' "$r/campaign-info"
        echo
        echo "agreement per firmware build and topology (agree/scored; placed = GPUs with every memory BAR"
        echo "assigned by the kernel; window = the 64-bit root window's start; unprog = GPUs the firmware"
        echo "left unprogrammed; p=chk = plan's diagnosis and placed GPUs those of check in the guest;"
        echo "plan_err = plan refused the flags, numbers then from the base flags):"
        printf '%-15s %-11s %4s %6s %7s %5s %6s %8s %9s %9s %9s %9s %9s %9s %8s %9s\n' build topology n booted refused hang unread plan_err \
            placed window unprog outcome check p=chk fw_unpr abandoned
        jq -r '
            def ag(f): [.[] | select(f != null)] as $s | "\([$s[] | select(f == true)] | length)/\($s | length)";
            group_by([.fw, .topology])[] |
            [ .[0].fw, .[0].topology, length,
              ([.[] | select(.outcome == "booted")] | length),
              ([.[] | select(.outcome == "qemu_refused")] | length),
              ([.[] | select(.outcome == "firmware_hang")] | length),
              ([.[] | select(.outcome == "truth_unread" or .outcome == "hang_escaped")] | length),
              ([.[] | select(.classes | index("plan_error"))] | length),
              ag(if .outcome == "booted" and .plan.placed != null and .plan.no_boot == null then (.classes | (index("placed_over") or index("placed_under")) | not) else null end),
              ag(if .outcome == "booted" and .via != "none" and .plan.no_boot == null then (.classes | index("window_base") | not) else null end),
              ag(if .outcome == "booted" and .plan.unprogrammed != null then (.classes | index("unprogrammed") | not) else null end),
              ag(if .via != "none" and (.outcome == "booted" or .outcome == "qemu_refused" or .outcome == "firmware_hang")
                 then (.classes | (index("qemu_refused_unpredicted") or index("firmware_hang_unpredicted") or index("predicted_no_boot_but_booted") or index("no_boot_kind")) | not) else null end),
              ag(if .outcome == "booted" then (.classes | (index("check_verdict") or index("check_missing")) | not) else null end),
              ag(if .outcome == "booted" and .check != null and .via != "none" and .plan.no_boot == null then (.classes | index("plan_check") | not) else null end),
              "\([.[] | select(.outcome == "booted") | .truth.unprogrammed] | add // 0)/\([.[] | select(.outcome == "booted") | .gpus] | add // 0)",
              ([.[] | select(.truth.bus_abandoned == true)] | length)
            ] | @tsv' <<<"$all" |
            while IFS=$'\t' read -r b t n bo re ha un pe pl wi up oc ch pc fu ab; do
                printf '%-15s %-11s %4s %6s %7s %5s %6s %8s %9s %9s %9s %9s %9s %9s %8s %9s\n' "$b" "$t" "$n" "$bo" "$re" "$ha" "$un" "$pe" "$pl" "$wi" "$up" "$oc" "$ch" "$pc" "$fu" "$ab"
            done
        echo "(fw_unpr: GPUs of booted records the firmware left unprogrammed, of all their GPUs;"
        echo " abandoned: records where the firmware programmed no memory BAR at all)"
        echo
        echo "totals: $(jq -r '"\(length) configurations, \([.[] | select(.outcome == "booted")] | length) booted, \([.[] | select(.outcome == "qemu_refused")] | length) qemu_refused, \([.[] | select(.outcome == "firmware_hang")] | length) firmware_hang, \([.[] | select(.outcome == "truth_unread" or .outcome == "hang_escaped")] | length) unmeasured, \([.[] | select(.classes | length == 0)] | length) in full agreement; boot time \([.[].secs // 0] | add) s in all"' <<<"$all")"
        # The figures the campaign is judged by: placed count right over the
        # booted records plan predicted a boot for; records plan called
        # healthy (predicted.ok) whose boot failed or left a GPU unplaced;
        # plan's diagnosis and placed GPUs equal to check's over the booted
        # records with check's report.
        echo "summary: $(jq -r '
            [.[] | select(.outcome == "booted" and .plan.placed != null and .plan.no_boot == null)] as $s
            | ([$s[] | select(.classes | (index("placed_over") or index("placed_under")) | not)] | length) as $r
            | ([.[] | select(.plan.ok == true and (.outcome != "booted" or (.truth.placed // 0) < .gpus))] | length) as $h
            | [.[] | select(.outcome == "booted" and .check != null and .via != "none" and .plan.no_boot == null)] as $c
            | ([$c[] | select(.classes | index("plan_check") | not)] | length) as $cc
            | ([.[] | select(.outcome == "booted")] | length) as $b
            | "placed count right \($r)/\($s | length)"
              + (if ($s | length) > 0 then " (\($r * 1000 / ($s | length) | floor / 10)%)" else "" end)
              + "; predicted healthy but failed \($h); plan == check \($cc)/\($c | length) (of \($b) booted)"' <<<"$all")"
        echo "per QEMU build: $(jq -r 'group_by(.qemu) | map("\(.[0].qemu) \(length)") | join(", ")' <<<"$all"); per machine type: $(jq -r 'group_by(.machine) | map("\(.[0].machine) \(length)") | join(", ")' <<<"$all")"
        echo "in full agreement per stand-in shape: $(jq -r 'group_by(.standin // "gpu") | map("\(.[0].standin // "gpu") \([.[] | select(.classes | length == 0)] | length)/\(length)") | join(", ")' <<<"$all"); per NIC: $(jq -r 'group_by(.nic // "none") | map("\(.[0].nic // "none") \([.[] | select(.classes | length == 0)] | length)/\(length)") | join(", ")' <<<"$all")"
        echo
        echo "disagreement classes (records):"
        jq -r '[.[].classes[]] | group_by(.) | map("  \(.[0]): \(length)") | .[]' <<<"$all"
        echo
        echo "per firmware build, over the boots that read the truth: wall seconds median / max, QEMU CPU seconds median / max:"
        jq -r 'map(select(.outcome == "booted")) | group_by(.fw)[] | (map(.secs) | sort) as $s | (map(.cpu_secs // empty) | sort) as $c |
            "  \(.[0].fw): \($s[(($s | length) - 1) / 2 | floor]) / \($s[-1]) s wall, \(if ($c | length) > 0 then "\($c[(($c | length) - 1) / 2 | floor]) / \($c[-1])" else "-" end) CPU s, over \($s | length)"' <<<"$all"
    } | tee "$r/table.txt"
    local d
    for d in "$r"/[0-9][0-9][0-9][0-9]; do
        [ -s "$d/score.json" ] || continue
        [ "$(jq '.classes | length' "$d/score.json")" -gt 0 ] || continue
        printf '%s [%s] plan: gpu-preflight plan %s | boot: %s | truth: %s | plan said: %s\n' "$(basename "$d")" \
            "$(jq -r '.classes | join(",")' "$d/score.json")" "$(tr '\n' ' ' <"$d/plan-flags")" \
            "$(cat "$d/qemu-cmdline" 2>/dev/null || echo -)" \
            "$(jq -c '.truth + {outcome}' "$d/score.json")" "$(jq -c '.plan' "$d/score.json")"
    done >"$r/disagreements.txt"
    echo
    echo "disagreements, one reproducer a line ($(grep -c . "$r/disagreements.txt")$([ -n "${2-}" ] || echo ", also in $r/disagreements.txt")):"
    cat "$r/disagreements.txt"
}

# vt_record DIR: the record in DIR as one JSON line, what vm-tests/records/
# keeps: id, seed, draw, the configuration, plan's flags (the full set and
# the base), the outcome and its seconds, QEMU's first error line when it
# refused, the truth without the BARs, check's summary (VT_JQ_CHECK_SUMMARY)
# and the commit of the binary the guest ran. No console, no guest files.
vt_record() {
    local d=$1 cfg truth=null qerr=''
    cfg=$(sed -n 's/^\([a-z0-9_]*\)="\(.*\)"$/\1\t\2/p' "$d/config" |
        jq -R -s -c 'split("\n") | map(select(length > 0) | split("\t") | {(.[0]): .[1]}) | add')
    [ -s "$d/truth.json" ] && truth=$(jq -c '{gpus: [.gpus[] | {slot, placed, firmware_programmed}],
        windows, window64_start, bus_abandoned, check: (.check | '"$VT_JQ_CHECK_SUMMARY"')}' "$d/truth.json")
    [ "$(cat "$d/outcome" 2>/dev/null)" != qemu_refused ] ||
        qerr=$(grep -m 1 -a 'qemu-system-x86_64:' "$d/qemu.log" 2>/dev/null | cut -c 1-240)
    jq -n -c --arg id "$(basename "$d")" --argjson seed "${VT_RECORD_SEED:-null}" --argjson config "$cfg" \
        --arg flags "$(cat "$d/plan-flags" 2>/dev/null)" --arg base "$(cat "$d/plan-base-flags" 2>/dev/null)" \
        --arg out "$(cat "$d/outcome" 2>/dev/null)" --arg secs "$(cat "$d/secs" 2>/dev/null)" \
        --arg cpu "$(cut -d' ' -f2 "$d/cpu_secs" 2>/dev/null)" --arg qerr "$qerr" --argjson truth "$truth" \
        --arg commit "${VT_RECORD_COMMIT-}" '
        {id: $id, seed: $seed, draw: ($config.draw // "v1"), config: $config,
         plan_flags: ($flags | split("\n") | map(select(length > 0))),
         plan_base_flags: ($base | split("\n") | map(select(length > 0))),
         outcome: $out, secs: ($secs | tonumber? // null), cpu_secs: ($cpu | tonumber? // null),
         qemu_error: (if $qerr == "" then null else $qerr end), truth: $truth,
         commit: (if $commit == "" then null else $commit end)}'
}

# vt_unrecord LINE DIR: makes DIR a record directory from a compact record
# (vt_record): config, plan-flags, plan-base-flags, outcome, secs, cpu_secs
# and truth.json (whose check is the summary), what vt_cfg_plan and
# vt_score read. Returns 1, having written no file, on a record jq cannot
# take apart.
vt_unrecord() {
    local line=$1 d=$2 texts f
    local -A text
    mkdir -p "$d"
    # One jq for the record, not one a file: a jq's start costs more than
    # its filter, and seven a record were about a third of the CI's
    # campaign-records stage. Each file's text is what `jq -r` printed for
    # its values (lines: one a line, each newline-ended; "\(.)" is -r's
    # text of a string or a number, and -c's of the truth), handed back as
    # shell assignments (@sh) so that a text's trailing newline survives
    # $(...). An absent secs or truth is an empty text, as it was.
    texts=$(jq -r '
        def lines: map("\(.)\n") | add // "";
        {config: (.config | to_entries | map("\(.key)=\"\(.value)\"") | lines),
         "plan-flags": (.plan_flags | lines),
         "plan-base-flags": (.plan_base_flags | lines),
         outcome: ([.outcome] | lines),
         secs: ([.secs // empty] | lines),
         cpu_secs: (["- \(.cpu_secs // "")"] | lines),
         "truth.json": ([if .truth == null then empty else .truth end] | lines)}
        | to_entries[] | "text[\(.key | @sh)]=\(.value | @sh)"' <<<"$line") || return 1
    eval "$texts"
    for f in "${!text[@]}"; do
        printf '%s' "${text[$f]}" >"$d/$f"
    done
    [ -s "$d/truth.json" ] || rm -f "$d/truth.json"
}
