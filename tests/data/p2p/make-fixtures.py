#!/usr/bin/env python3
"""Builds the tests/fixtures/p2p-* trees from the real H200 guest's capture
(tests/fixtures/h200-kvm-passthrough): the GPU is copied to a second slot
(its BAR addresses moved up by 512 GiB, in `resource`, in the config-space
BAR registers and in the log's enumeration lines), and the config bytes are
edited the way QEMU would write them: the GPUDirect clique capability
(vendor cap 0x09, len 8, "P2P", clique << 3) linked at the end of the list
at 0xC8, or at 0xD4 with MSI-X moved to 0xC8 (as Turing and later have
it). Run from the repository root; then regenerate the goldens with
UPDATE_GOLDEN=1 cargo test --test fixtures. Not run by CI: the trees are
committed."""

import os
import shutil
import sys

SRC = "tests/fixtures/h200-kvm-passthrough"
GPU = "0000:00:06.0"
SHIFT = 0x80_0000_0000  # 512 GiB


def caps(cfg):
    out, pos = [], cfg[0x34] & 0xFC
    while pos >= 0x40 and len(out) < 48:
        out.append(pos)
        pos = cfg[pos + 1] & 0xFC
    return out


def with_clique(cfg, at, clique):
    cfg = bytearray(cfg)
    last = caps(cfg)[-1]
    cfg[last + 1] = at
    cfg[at:at + 8] = bytes([0x09, 0, 8, ord("P"), ord("2"), ord("P"), clique << 3, 0])
    return bytes(cfg)


def msix_to_c8(cfg):
    """Moves the MSI-X capability (0xb0 here) to 0xc8."""
    cfg = bytearray(cfg)
    lst = caps(cfg)
    i = lst.index(0xB0)
    cfg[0xC8:0xC8 + 12] = cfg[0xB0:0xB0 + 12]
    cfg[0xB0:0xB0 + 12] = bytes(12)
    cfg[lst[i - 1] + 1] = 0xC8
    return bytes(cfg)


def shifted_config(cfg):
    cfg = bytearray(cfg)
    for hi in (0x14, 0x1C, 0x24):
        v = int.from_bytes(cfg[hi:hi + 4], "little") + (SHIFT >> 32)
        cfg[hi:hi + 4] = v.to_bytes(4, "little")
    return bytes(cfg)


def shifted_resource(text):
    lines = []
    for l in text.splitlines():
        s, e, f = (int(x, 16) for x in l.split())
        if s:
            s, e = s + SHIFT, e + SHIFT
        lines.append("0x%016x 0x%016x 0x%016x" % (s, e, f))
    return "\n".join(lines) + "\n"


def shifted_log_line(line, bdf):
    import re
    line = line.replace(GPU, bdf)
    return re.sub(r"0x([0-9a-f]{12})", lambda m: "0x%012x" % (int(m.group(1), 16) + SHIFT), line)


def build(name, scenario, cliques=(None, None), d4=False, log_kvm=True,
          config_bytes=None, switch=False, nccl=None, dmar_haw=None):
    dst = f"tests/fixtures/{name}"
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(SRC, dst, symlinks=True)
    for f in ("expected.txt", "expected.json"):
        os.remove(f"{dst}/{f}")
    root = f"{dst}/root"
    devs = f"{root}/sys/devices/pci0000:00"
    gpu = f"{devs}/{GPU}"
    cfg0 = open(f"{gpu}/config", "rb").read()
    if d4:
        cfg0 = msix_to_c8(cfg0)
    res0 = open(f"{gpu}/resource").read()
    if switch:
        a, b = "0000:03:00.0", "0000:04:00.0"
        chain = ["0000:00:07.0", "0000:01:00.0"]
        paths = {a: chain + ["0000:02:00.0", a], b: chain + ["0000:02:01.0", b]}
    else:
        a, b = GPU, "0000:00:07.0"
        paths = {a: [a], b: [b]}
    tmp = f"{dst}/gpu.tmp"
    shutil.move(gpu, tmp)
    os.remove(f"{root}/sys/bus/pci/devices/{GPU}")
    for bdf, clique, shift in ((a, cliques[0], False), (b, cliques[1], True)):
        d = os.path.join(devs, *paths[bdf])
        shutil.copytree(tmp, d)
        cfg = shifted_config(cfg0) if shift else cfg0
        if clique is not None:
            cfg = with_clique(cfg, 0xD4 if d4 else 0xC8, clique)
        if config_bytes:
            cfg = cfg[:config_bytes]
        open(f"{d}/config", "wb").write(cfg)
        open(f"{d}/resource", "w").write(shifted_resource(res0) if shift else res0)
        rel = "../../../devices/pci0000:00/" + "/".join(paths[bdf])
        os.symlink(rel, f"{root}/sys/bus/pci/devices/{bdf}")
    shutil.rmtree(tmp)
    if switch:
        port = "tests/fixtures/ovmf-8x16g/root/sys/devices/pci0000:00/0000:00:01.0"
        # (bdf, device id, prefetchable window): a root port, the switch's
        # upstream port and its two downstream ports (QEMU's x3130 ids).
        bridges = [
            ("0000:00:07.0", (0x1B36, 0x000C), (0x100000000000, 0x10FFFFFFFFFF)),
            ("0000:00:07.0/0000:01:00.0", (0x104C, 0x8232), (0x100000000000, 0x10FFFFFFFFFF)),
            ("0000:00:07.0/0000:01:00.0/0000:02:00.0", (0x104C, 0x8233), (0x100000000000, 0x107FFFFFFFFF)),
            ("0000:00:07.0/0000:01:00.0/0000:02:01.0", (0x104C, 0x8233), (0x108000000000, 0x10FFFFFFFFFF)),
        ]
        for path, (ven, dev), (ws, we) in bridges:
            d = f"{devs}/{path}"
            os.makedirs(d, exist_ok=True)
            for f in ("class", "revision", "subsystem_vendor", "subsystem_device", "enable", "irq", "numa_node"):
                shutil.copy(f"{port}/{f}", f"{d}/{f}")
            open(f"{d}/vendor", "w").write("0x%04x\n" % ven)
            open(f"{d}/device", "w").write("0x%04x\n" % dev)
            cfg = bytearray(open(f"{port}/config", "rb").read())
            cfg[0:4] = bytes([ven & 0xFF, ven >> 8, dev & 0xFF, dev >> 8])
            open(f"{d}/config", "wb").write(bytes(cfg))
            lines = ["0x%016x 0x%016x 0x%016x" % (0, 0, 0)] * 17
            lines[15] = "0x%016x 0x%016x 0x%016x" % (ws, we, 0x102201)
            open(f"{d}/resource", "w").write("\n".join(lines) + "\n")
            bdf = path.split("/")[-1]
            os.symlink("../../../devices/pci0000:00/" + path, f"{root}/sys/bus/pci/devices/{bdf}")
    log = open(f"{dst}/dmesg.txt").read().splitlines()
    out = []
    for l in log:
        if "Hypervisor detected: KVM" in l and not log_kvm:
            continue
        if GPU in l:
            out.append(l.replace(GPU, a))
            out.append(shifted_log_line(l, b))
        else:
            out.append(l)
    open(f"{dst}/dmesg.txt", "w").write("\n".join(out) + "\n")
    if nccl:
        os.makedirs(f"{root}/etc", exist_ok=True)
        open(f"{root}/etc/nccl.conf", "w").write(nccl)
    if dmar_haw:
        t = f"{root}/sys/firmware/acpi/tables"
        os.makedirs(t, exist_ok=True)
        dmar = bytearray(48)
        dmar[0:4] = b"DMAR"
        dmar[4:8] = (48).to_bytes(4, "little")
        dmar[36] = dmar_haw - 1
        open(f"{t}/DMAR", "wb").write(bytes(dmar))
    open(f"{dst}/scenario.txt", "w").write(scenario)


def scenario(derived, p2p, p2p_hints):
    return f"""derived: from tests/fixtures/h200-kvm-passthrough (a real H200 KVM guest, read as root) by tests/data/p2p/make-fixtures.py: {derived}
machine: two NVIDIA H200 in a KVM guest; the second is the first's copy with its BARs 512 GiB higher
check args: --expect 2
expect verdict: ok
expect diagnosis: ok
expect found: 2
expect unassigned: -
expect hints: -
expect p2p: {p2p}
expect p2p hints: {p2p_hints}
"""


def main():
    build("p2p-h200x2-clique-c8-nccl-phb",
          scenario("clique 0 at 0xC8 on both; /etc/nccl.conf sets NCCL_P2P_LEVEL=PHB",
                   "verdict=unknown driver=granted path=granted host=unknown p2p_path=PHB", "-"),
          cliques=(0, 0), nccl="# site tuning\nNCCL_P2P_LEVEL=PHB\nNCCL_DEBUG=WARN\n")
    build("p2p-h200x2-clique-d4",
          scenario("MSI-X moved to 0xC8 (as Turing and later have it), clique 0 at 0xD4 on both",
                   "verdict=refused driver=granted path=refused host=unknown p2p_path=PHB", "p2p-nccl-level p2p-pcie-switch"),
          cliques=(0, 0), d4=True)
    build("p2p-h200x2-no-clique",
          scenario("no clique capability (as captured)",
                   "verdict=refused driver=refused path=refused host=unknown p2p_path=PHB", "p2p-gpudirect-clique p2p-nccl-level p2p-pcie-switch"))
    build("p2p-h200x2-mismatched-cliques",
          scenario("clique 0 at 0xC8 on the first, clique 1 on the second",
                   "verdict=refused driver=refused path=refused host=unknown p2p_path=PHB", "p2p-gpudirect-clique p2p-nccl-level p2p-pcie-switch"),
          cliques=(0, 1))
    build("p2p-h200x2-kvm-hidden",
          scenario("clique 0 on both; the log's `Hypervisor detected: KVM` line removed (KVM hidden: cpu hidden=1 / kvm=off), the hypervisor CPU flag kept",
                   "verdict=refused driver=refused path=refused host=unknown p2p_path=PHB", "p2p-kvm-visible p2p-nccl-level p2p-pcie-switch"),
          cliques=(0, 0), log_kvm=False)
    build("p2p-h200x2-unprivileged",
          scenario("clique 0 on both, config space cut to the 64 bytes an unprivileged reader gets",
                   "verdict=refused driver=unknown path=refused host=unknown p2p_path=PHB", "p2p-nccl-level p2p-pcie-switch"),
          cliques=(0, 0), config_bytes=64)
    build("p2p-h200x2-switch",
          scenario("clique 0 on both, the GPUs moved behind one PCIe switch (a root port, an x3130 upstream port, two downstream ports; bridge files from tests/fixtures/ovmf-8x16g's root port)",
                   "verdict=unknown driver=granted path=granted host=unknown p2p_path=PXB", "-"),
          cliques=(0, 0), switch=True)
    build("p2p-h200x2-viommu-39bit",
          scenario("clique 0 on both, NCCL_P2P_LEVEL=PHB, and an ACPI DMAR table whose host address width is 39 bits (QEMU intel-iommu's old default)",
                   "verdict=refused driver=granted path=granted host=refused p2p_path=PHB", "p2p-viommu-aw-bits"),
          cliques=(0, 0), nccl="NCCL_P2P_LEVEL=PHB\n", dmar_haw=39)


if __name__ == "__main__":
    sys.exit(main())
