#!/bin/bash
# vm-tests only: the boot step's floor in dracut images (see floor-hook.sh).
# The program is in the staged tree at /usr/lib/vm-tests/boot-floor.

check() {
    return 0
}

depends() {
    return 0
}

install() {
    inst_simple /usr/lib/vm-tests/boot-floor
    # shellcheck disable=SC2154 # moddir is set by dracut
    inst_hook pre-udev 11 "$moddir/floor-hook.sh"
}
